//! The module loader QuickJS gets: the bundle's modules by their canonical names, the
//! built-in module `"ctop"` (the sdk source the [`super::Vm`] was given), and the SDK's own
//! modules, which only the SDK imports ([`crate::sdk::resolve`]). It needs no file system.

use std::sync::Arc;

use rquickjs::Ctx;
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::module::Declared;

use super::SDK_MODULE;
use crate::bundle::Bundle;
use crate::sdk;

/// Resolver and loader over the bundle and the SDK: a bundle's specifiers are canonical
/// module names already.
#[derive(Clone)]
pub(super) struct BundleLoader {
    pub(super) bundle: Arc<Bundle>,
    /// The source of the module `"ctop"`.
    pub(super) sdk: Arc<str>,
}

impl Resolver for BundleLoader {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        if name == SDK_MODULE || self.bundle.modules.contains_key(name) {
            return Ok(name.to_owned());
        }
        match sdk::resolve(base, name) {
            Some(module) => Ok(module.to_owned()),
            None => Err(rquickjs::Error::new_resolving_message(base, name, "no such module in the bundle")),
        }
    }
}

impl Loader for BundleLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<rquickjs::Module<'js, Declared>> {
        let js = if name == SDK_MODULE {
            &*self.sdk
        } else if let Some(module) = self.bundle.modules.get(name) {
            module.js.as_str()
        } else if let Some(source) = sdk::module(name) {
            source
        } else {
            return Err(rquickjs::Error::new_loading(name));
        };
        rquickjs::Module::declare(ctx.clone(), name, js)
    }
}
