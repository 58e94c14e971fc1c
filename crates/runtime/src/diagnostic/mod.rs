//! Code frames of script errors: [`frame_in_bundle`] finds the original source line of a
//! position in a bundle module (the text its source map carries) and returns a
//! [`CodeFrame`] (defined in `ctop-core`, printed with `{}`); [`frame_in`] finds the frame of
//! an error chain (a script exception carries its own; a load error's is read from the
//! operator directory), for the commands that print errors on a terminal. [`Framed`] keeps
//! a load error together with its frame once the directory is no longer at hand.
//! [`call_site`] moves the position of a call from wherever QuickJS left it in the
//! arguments to the call itself.

pub mod call_site;

use std::path::Path;

use oxc_sourcemap::SourceMap;

pub use ctop_core::CodeFrame;

use crate::bundle::Bundle;
use crate::load::LoadError;
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

/// A load error with the code frame of its position, read from the operator directory
/// ([`Framed::new`]). Displays as the error and has the same causes (it is transparent).
#[derive(Debug)]
pub struct Framed {
    /// The error.
    pub error: LoadError,
    /// Where it is, when it is in a file that could be read.
    pub frame: Option<CodeFrame>,
}

impl Framed {
    /// `error`, with the frame of its position in the files of `dir`.
    #[must_use]
    pub fn new(error: LoadError, dir: &Path) -> Self {
        let frame = load_frame(&error, dir);
        Self { error, frame }
    }
}

impl std::fmt::Display for Framed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for Framed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// The frame of a load error's position in the files of `dir`.
fn load_frame(error: &LoadError, dir: &Path) -> Option<CodeFrame> {
    let (file, line, column) = error.position()?;
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    CodeFrame::new(file, &text, line, column)
}

/// The code frame of `error` or one of its causes: a script exception's, a handler
/// failure's, a [`Framed`] error's, or a load error's position read from `dir`.
pub fn frame_in(error: &(dyn std::error::Error + 'static), dir: Option<&Path>) -> Option<CodeFrame> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(framed) = e.downcast_ref::<Framed>() {
            return framed.frame.clone();
        }
        let vm = e.downcast_ref::<VmError>().or_else(|| match e.downcast_ref::<ScriptError>() {
            Some(ScriptError::Vm(vm)) => Some(vm),
            _ => None,
        });
        if let Some(VmError::Exception { frame: Some(frame), .. }) = vm {
            return Some((**frame).clone());
        }
        if let Some(frame) = e.downcast_ref::<ctop_core::HandlerError>().and_then(|h| h.frame.as_ref()) {
            return Some(frame.clone());
        }
        let load = e.downcast_ref::<LoadError>().or_else(|| match e.downcast_ref::<ScriptError>() {
            Some(ScriptError::Load(load)) => Some(load),
            _ => None,
        });
        if let (Some(load), Some(dir)) = (load, dir) {
            return load_frame(load, dir);
        }
        next = e.source();
    }
    None
}
