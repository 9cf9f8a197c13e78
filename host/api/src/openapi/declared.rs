//! The intent kinds the stored controllers declare, documented as the
//! kind table's are.

use serde_json::{Value, json};

use wasmco_core::Kind;

use super::parts::{error_responses, parameters};

/// Every declared intent kind's collection and item, as the kind table's.
pub(super) fn document_declared(
    paths: &mut serde_json::Map<String, Value>,
    catalog: &wasmco_orchestrator::intents::Catalog,
) {
    use wasmco_core::intents::IntentBody;
    let dig = Kind::DeploymentIntentGroup.item_route();
    for declared in catalog.all() {
        let declaration = &declared.declaration;
        for kind in &declaration.kinds {
            let mut chain = vec![kind];
            let mut at = kind.parent.as_deref();
            while let Some(found) = at.and_then(|parent| declaration.kind(parent)) {
                chain.push(found);
                at = found.parent.as_deref();
            }
            chain.reverse();
            let mut collection = dig.clone();
            for (i, step) in chain.iter().enumerate() {
                collection.push('/');
                collection.push_str(&step.segment);
                if i + 1 < chain.len() {
                    collection.push_str(&format!("/{{{}}}", step.param));
                }
            }
            let item = format!("{collection}/{{{}}}", kind.param);
            let document = json!({
                "type": "object", "required": ["metadata"],
                "properties": {"metadata": {"$ref": "#/components/schemas/Metadata"}, "spec": kind.schema},
            });
            let file_part = if kind.body == IntentBody::File {
                "file"
            } else {
                "files"
            };
            let request = match kind.body {
                IntentBody::Json => json!({"required": true,
                    "content": {"application/json": {"schema": document}}}),
                IntentBody::File | IntentBody::Files => json!({"required": true,
                    "content": {"multipart/form-data": {"schema": {"type": "object", "required": ["metadata"],
                        "properties": {"metadata": document,
                                       file_part: {"type": "string", "format": "binary"}}}}}}),
            };
            let owner = format!("(declared by controller {})", declared.controller);
            let title = &kind.name;
            let errors = error_responses();
            let mut created = errors.clone();
            created["201"] = json!({"description": "created; the stored body"});
            let mut updated = errors.clone();
            updated["200"] = json!({"description": "updated; the stored body"});
            paths.insert(collection.clone(), json!({
                "get": {"summary": format!("list {title}s {owner}"), "parameters": parameters(&collection),
                        "responses": {"200": {"description": "OK"}, "404": errors["404"]}},
                "post": {"summary": format!("create a {title} {owner}"), "parameters": parameters(&collection),
                         "requestBody": request, "responses": created},
            }));
            paths.insert(item.clone(), json!({
                "get": {"summary": format!("get a {title}"), "parameters": parameters(&item),
                        "responses": {"200": {"description": "OK"}, "404": errors["404"]}},
                "put": {"summary": format!("update a {title}"), "parameters": parameters(&item),
                        "requestBody": request, "responses": updated},
                "delete": {"summary": format!("delete a {title}"), "parameters": parameters(&item),
                           "responses": {"204": {"description": "deleted"}, "404": errors["404"],
                                         "409": errors["409"]}},
            }));
        }
    }
}
