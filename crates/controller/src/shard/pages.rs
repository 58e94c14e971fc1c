//! A list by label selector read a page at a time ([`Pages`]), as the sharder and the arrival
//! wait read every object of a kind that a selector picks.

use kube::api::{Api, DynamicObject, ListParams};

/// Objects listed a page at a time.
const PAGE: u32 = 500;

/// A list by label selector, [`PAGE`] objects a page: [`Pages::next`] until `None`.
pub(crate) struct Pages<'a> {
    api: &'a Api<DynamicObject>,
    selector: &'a str,
    /// `None` once the last page was read; `Some(None)` before the first.
    next: Option<Option<String>>,
}

impl<'a> Pages<'a> {
    pub(crate) fn new(api: &'a Api<DynamicObject>, selector: &'a str) -> Self {
        Self { api, selector, next: Some(None) }
    }

    /// The next page, `None` after the last.
    pub(crate) async fn next(&mut self) -> Result<Option<Vec<DynamicObject>>, kube::Error> {
        let Some(token) = self.next.take() else { return Ok(None) };
        let mut lp = ListParams::default().labels(self.selector).limit(PAGE);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = self.api.list(&lp).await?;
        self.next = page.metadata.continue_.filter(|t| !t.is_empty()).map(Some);
        Ok(Some(page.items))
    }
}
