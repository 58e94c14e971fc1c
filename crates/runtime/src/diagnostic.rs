//! Code frames of script errors: [`frame_in_bundle`] finds the original source line of a
//! position in a bundle module (the text its source map carries) and returns a
//! [`CodeFrame`] (defined in `ctop-core`, printed with `{}`); [`frame_of`] finds the frame an
//! error chain carries, for the commands that print errors on a terminal.

use oxc_sourcemap::SourceMap;

pub use ctop_core::CodeFrame;

use crate::bundle::Bundle;
use crate::script::ScriptError;
use crate::vm::VmError;

/// The frame at a position in the original source of bundle module `file`; `None` for
/// modules without a source map (JSON) or without the source text.
pub fn frame_in_bundle(bundle: &Bundle, file: &str, line: u32, column: u32) -> Option<CodeFrame> {
    let map_json = bundle.modules.get(file)?.source_map.as_deref()?;
    let map = SourceMap::from_json_string(map_json).ok()?;
    let source = map.get_source_content(0)?;
    CodeFrame::new(file, source, line, column)
}

/// The code frame carried by `error` or one of its causes: a script exception, or a
/// handler failure caused by one.
pub fn frame_of<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a CodeFrame> {
    let mut next = Some(error);
    while let Some(e) = next {
        let vm = e.downcast_ref::<VmError>().or_else(|| match e.downcast_ref::<ScriptError>() {
            Some(ScriptError::Vm(vm)) => Some(vm),
            _ => None,
        });
        if let Some(VmError::Exception { frame: Some(frame), .. }) = vm {
            return Some(frame);
        }
        if let Some(frame) = e.downcast_ref::<ctop_core::HandlerError>().and_then(|h| h.frame.as_ref()) {
            return Some(frame);
        }
        next = e.source();
    }
    None
}
