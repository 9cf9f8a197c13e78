//! What is read from a component's bytes before Cranelift sees them: its
//! imports and exports (a component the sandbox would refuse is refused
//! without being compiled), and the shape of its code. Compile time grows
//! with a function's size and, faster than linearly, with its live locals:
//! one function of 4,000 `i64` locals took 27 s to compile; such functions
//! are refused here, in one linear pass.

use wasmparser::{Parser, Payload};

use wasmco_core::controllers::ControllerKind;

use crate::contract::{ContractVersion, export_names};
use crate::error::RegistrationError;

/// Bounds on a component's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeLimits {
    /// Bytes of one function body.
    pub function_bytes: usize,
    /// Locals one function declares (parameters not counted).
    pub function_locals: u64,
    /// Functions in all of the component's core modules.
    pub functions: usize,
}

impl Default for CodeLimits {
    /// Far above what compilers emit for controllers (the shipped ones stay
    /// under a tenth of each), far below what stalls Cranelift.
    fn default() -> Self {
        CodeLimits {
            function_bytes: 1 << 20,
            function_locals: 1_000,
            functions: 200_000,
        }
    }
}

/// What the component imports and exports at its top level.
#[derive(Debug, Default)]
struct Surface {
    imports: Vec<String>,
    exports: Vec<String>,
}

/// Reads the component once: refuses code past `limits`, imports outside
/// `allowed` and a component that does not export `kind`'s interface.
pub(super) fn precheck(
    wasm: &[u8],
    kind: ControllerKind,
    limits: &CodeLimits,
    allowed: impl Fn(&str) -> bool,
) -> Result<(), RegistrationError> {
    let surface = read(wasm, limits)?;
    let forbidden: Vec<String> = surface
        .imports
        .iter()
        .filter(|name| !allowed(name))
        .cloned()
        .collect();
    if !forbidden.is_empty() {
        return Err(RegistrationError::ForbiddenImports(forbidden));
    }
    if ContractVersion::exported(kind, surface.exports.iter().map(String::as_str)).is_none() {
        return Err(RegistrationError::WrongWorld {
            kind,
            expected: export_names(kind),
            found: if surface.exports.is_empty() {
                "nothing".to_owned()
            } else {
                surface.exports.join(", ")
            },
        });
    }
    Ok(())
}

fn read(wasm: &[u8], limits: &CodeLimits) -> Result<Surface, RegistrationError> {
    let malformed = |e: wasmparser::BinaryReaderError| RegistrationError::Compile(e.to_string());
    let mut surface = Surface::default();
    // Nested modules and components come inline; only depth 0 is the
    // component's own surface.
    let mut depth = 0usize;
    let mut functions = 0usize;
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(malformed)? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(imports) if depth == 0 => {
                for import in imports {
                    surface
                        .imports
                        .push(import.map_err(malformed)?.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(exports) if depth == 0 => {
                for export in exports {
                    surface
                        .exports
                        .push(export.map_err(malformed)?.name.name.to_owned());
                }
            }
            Payload::CodeSectionStart { count, .. } => {
                functions += count as usize;
                if functions > limits.functions {
                    return Err(code_limit(format!(
                        "more than {} functions",
                        limits.functions
                    )));
                }
            }
            Payload::CodeSectionEntry(body) => {
                let size = body.range().len();
                if size > limits.function_bytes {
                    return Err(code_limit(format!(
                        "a function of {size} bytes, over the {} a function may have",
                        limits.function_bytes
                    )));
                }
                let mut locals = 0u64;
                for group in body.get_locals_reader().map_err(malformed)? {
                    locals += u64::from(group.map_err(malformed)?.0);
                    if locals > limits.function_locals {
                        return Err(code_limit(format!(
                            "a function with more than {} locals",
                            limits.function_locals
                        )));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(surface)
}

/// The `wasmco:intents` custom section (see `wasmco_core::intents`), at
/// the component's top level or in one of its core modules; `None` when
/// it declares no intent kinds. Two such sections are refused: which one
/// holds would be the toolchain's accident.
pub fn declared_intents(wasm: &[u8]) -> Result<Option<&[u8]>, RegistrationError> {
    let mut found = None;
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(|e| RegistrationError::Compile(e.to_string()))?;
        if let Payload::CustomSection(section) = payload
            && section.name() == wasmco_core::intents::SECTION
            && found.replace(section.data()).is_some()
        {
            return Err(RegistrationError::Code(format!(
                "the component has more than one {} section",
                wasmco_core::intents::SECTION
            )));
        }
    }
    Ok(found)
}

fn code_limit(what: String) -> RegistrationError {
    RegistrationError::Code(format!(
        "the component has {what}; such code takes too long to compile"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component embedding one core module with one function of
    /// `locals` i64 locals.
    fn component_with_locals(locals: usize) -> Vec<u8> {
        let uses: String = (0..locals)
            .map(|i| format!("(local.set {i} (i64.const {i}))"))
            .collect();
        let text = format!(
            "(component (core module (func (local {}) {uses})))",
            "i64 ".repeat(locals)
        );
        wat::parse_str(text).expect("valid text")
    }

    #[test]
    fn shipped_controllers_pass_and_wide_functions_do_not() {
        for name in ["generic-placement", "gac", "capacity-placement"] {
            let builtin = crate::builtin::builtin(name).expect("built in");
            precheck(builtin.wasm, builtin.kind, &CodeLimits::default(), |_| true)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let limits = CodeLimits {
            function_locals: 100,
            ..CodeLimits::default()
        };
        let error = read(&component_with_locals(101), &limits).unwrap_err();
        assert!(
            error.to_string().contains("more than 100 locals"),
            "{error}"
        );
        read(&component_with_locals(100), &limits).unwrap();
        let small = CodeLimits {
            function_bytes: 64,
            ..CodeLimits::default()
        };
        let error = read(&component_with_locals(50), &small).unwrap_err();
        assert!(error.to_string().contains("bytes"), "{error}");
    }

    #[test]
    fn imports_and_exports_are_read_before_any_compile() {
        let builtin = crate::builtin::builtin("gac").expect("built in");
        let error = precheck(builtin.wasm, builtin.kind, &CodeLimits::default(), |name| {
            !name.starts_with("wasi:cli/stdout")
        })
        .unwrap_err();
        assert!(
            matches!(error, RegistrationError::ForbiddenImports(_)),
            "{error}"
        );
        let other = match builtin.kind {
            ControllerKind::Placement => ControllerKind::Action,
            ControllerKind::Action | ControllerKind::Gate => ControllerKind::Placement,
        };
        let error = precheck(builtin.wasm, other, &CodeLimits::default(), |_| true).unwrap_err();
        assert!(
            matches!(error, RegistrationError::WrongWorld { .. }),
            "{error}"
        );
    }
}
