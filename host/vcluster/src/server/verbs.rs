//! The verbs on an object path, each as the API server answers it: get,
//! list (or watch), create, replace, patch (server-side apply among them),
//! delete, and the approval of a certificate signing request.

use std::sync::Arc;

use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::request::{Params, Subresource, Target, manager, parse_body};
use super::response::json_response;
use super::shared::{Shared, record};
use super::watch::watch;
use crate::catalog::ResourceType;
use crate::objects::{KubeError, PatchKind, Selector};

/// One request on an object path.
pub(super) struct Request<'a> {
    pub shared: &'a Arc<Shared>,
    pub target: &'a Target,
    pub params: &'a Params,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
}

impl Request<'_> {
    /// Answers the request as its method asks.
    pub(super) fn handle(&self, method: &Method) -> Result<Response, KubeError> {
        match (method.as_str(), &self.target.name, self.target.subresource) {
            ("PUT" | "PATCH", Some(name), Subresource::Approval) => self.approve(name),
            ("GET", None, _) => self.list(),
            ("GET", Some(name), _) => self.get(name),
            ("POST", None, _) => self.create(),
            ("PUT", Some(name), _) => self.replace(name),
            ("PATCH", Some(name), _) => self.patch(name),
            ("DELETE", Some(name), _) => self.delete(name),
            (other, _, _) => Err(KubeError::method_not_allowed(other)),
        }
    }

    fn ty(&self) -> &ResourceType {
        &self.target.ty
    }

    /// The namespace of the path; empty for a cluster-scoped one.
    fn namespace(&self) -> &str {
        self.target.namespace.as_deref().unwrap_or("")
    }

    fn manager(&self) -> String {
        manager(self.params, self.headers)
    }

    /// PUT or PATCH of a CertificateSigningRequest's approval: sets its
    /// conditions, and signs it when they approve it.
    fn approve(&self, name: &str) -> Result<Response, KubeError> {
        let (value, _) = parse_body(self.headers, self.body)?;
        let conditions = value["status"]["conditions"].clone();
        if !conditions.is_array() {
            return Err(KubeError::bad_request(
                "status.conditions: Required value: an approval sets the request's conditions",
            ));
        }
        let signer = self.shared.signer().ok_or_else(|| {
            KubeError::bad_request("the cluster has no CA to sign certificates with")
        })?;
        let mut objects = self.shared.objects();
        let current = objects.get(self.ty(), self.namespace(), name)?;
        let status = signer.after_approval(&current, conditions);
        let (object, event) = objects.set_status(self.ty(), self.namespace(), name, status)?;
        self.shared.publish(event);
        drop(objects);
        ok(StatusCode::OK, object)
    }

    /// GET of a collection: a list, or a watch when asked for one.
    fn list(&self) -> Result<Response, KubeError> {
        let selector = Selector::parse(self.params.label_selector.as_deref().unwrap_or(""))?;
        if self.params.watches() {
            return Ok(watch(self.shared, self.target, selector, self.params));
        }
        let list =
            self.shared
                .objects()
                .list(self.ty(), self.target.namespace.as_deref(), &selector);
        ok(StatusCode::OK, list)
    }

    fn get(&self, name: &str) -> Result<Response, KubeError> {
        let object = self
            .shared
            .objects()
            .get(self.ty(), self.namespace(), name)?;
        ok(StatusCode::OK, object)
    }

    fn create(&self) -> Result<Response, KubeError> {
        let (value, _) = parse_body(self.headers, self.body)?;
        let mut objects = self.shared.objects();
        let (object, event) = objects.create(self.ty(), self.namespace(), value)?;
        objects.updated_by(self.ty(), &self.manager(), None, &object);
        record(self.shared, self.ty(), event);
        drop(objects);
        ok(StatusCode::CREATED, object)
    }

    /// PUT of an object, or of its status.
    fn replace(&self, name: &str) -> Result<Response, KubeError> {
        let (ty, namespace) = (self.ty(), self.namespace());
        let (value, _) = parse_body(self.headers, self.body)?;
        let mut objects = self.shared.objects();
        let (object, event) = if self.target.subresource == Subresource::Status {
            objects.set_status(ty, namespace, name, value["status"].clone())?
        } else {
            let before = objects.get(ty, namespace, name).ok();
            let (object, event) = objects.replace(ty, namespace, name, value)?;
            objects.updated_by(ty, &self.manager(), before.as_ref(), &object);
            (object, event)
        };
        record(self.shared, ty, event);
        drop(objects);
        ok(StatusCode::OK, object)
    }

    /// PATCH of an object (server-side apply may create it), or of its status.
    fn patch(&self, name: &str) -> Result<Response, KubeError> {
        let (ty, namespace) = (self.ty(), self.namespace());
        let (value, kind) = parse_body(self.headers, self.body)?;
        let kind = kind.ok_or_else(|| KubeError::unsupported_media_type("application/json"))?;
        if kind == PatchKind::Apply
            && self
                .params
                .field_manager
                .as_deref()
                .is_none_or(str::is_empty)
        {
            return Err(KubeError::bad_request(
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            ));
        }
        if self.target.subresource == Subresource::Status {
            let mut objects = self.shared.objects();
            let (object, event) =
                objects.set_status(ty, namespace, name, value["status"].clone())?;
            self.shared.publish(event);
            drop(objects);
            return ok(StatusCode::OK, object);
        }
        let manager = self.manager();
        let mut objects = self.shared.objects();
        let (object, event, created) = if kind == PatchKind::Apply {
            let force = self.params.force.unwrap_or(false);
            objects.apply(ty, namespace, name, value, &manager, force)?
        } else {
            let before = objects.get(ty, namespace, name).ok();
            let answer = objects.patch(ty, namespace, name, kind, value)?;
            objects.updated_by(ty, &manager, before.as_ref(), &answer.0);
            answer
        };
        record(self.shared, ty, event);
        drop(objects);
        let code = if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        ok(code, object)
    }

    fn delete(&self, name: &str) -> Result<Response, KubeError> {
        // DeleteOptions, when sent: only its uid precondition matters here.
        let options: Value = serde_json::from_slice(self.body).unwrap_or_default();
        let uid = options["preconditions"]["uid"].as_str();
        let mut objects = self.shared.objects();
        let (object, event) = objects.delete(self.ty(), self.namespace(), name, uid)?;
        self.shared.publish(event);
        drop(objects);
        ok(StatusCode::OK, object)
    }
}

fn ok(code: StatusCode, value: Value) -> Result<Response, KubeError> {
    Ok(json_response(code, &value))
}
