//! Publishing an outcome's events, and how events and messages name objects.

use ctop_core::{EventRecord, EventType};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType as KubeEventType};

use crate::context::Ctx;
use crate::object::Object;

/// Publish `events`: about the object each names in `regarding`, else about `owner`
/// (events of `onStart` without `regarding` are logged instead).
pub(crate) async fn publish_events(ctx: &Ctx, owner: Option<&Object>, events: &[EventRecord]) {
    let own: Option<ObjectReference> = owner.map(|o| o.reference(&ctx.primary));
    if let Some(o) = owner
        && !events.is_empty()
    {
        ctx.memory.note(&crate::object::object_key(o), |d| {
            for e in events {
                let type_ = match e.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                };
                d.event(type_, &e.reason, &e.message);
            }
        });
    }
    for e in events {
        let reference = match (&e.regarding, &own) {
            (Some(r), _) => ObjectReference {
                api_version: r.api_version.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
                namespace: r.namespace.clone(),
                uid: r.uid.clone(),
                ..ObjectReference::default()
            },
            (None, Some(own)) => own.clone(),
            (None, None) => {
                tracing::info!(
                    controller = ctx.spec.name,
                    reason = e.reason,
                    message = e.message,
                    "event without an object"
                );
                continue;
            }
        };
        let event = Event {
            type_: match e.type_ {
                EventType::Normal => KubeEventType::Normal,
                EventType::Warning => KubeEventType::Warning,
            },
            reason: e.reason.clone(),
            note: Some(event_note(&e.message)).filter(|n| !n.is_empty()),
            action: "Reconcile".into(),
            secondary: None,
        };
        if let Err(err) = ctx.recorder.publish(&event, &reference).await {
            tracing::warn!(error = %crate::error::api_error_text(&err), "cannot publish an event");
        }
    }
}

/// An event's note: at most 1 kB, as the API server allows.
pub(crate) fn event_note(text: &str) -> String {
    const MAX: usize = 1024;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut cut = text[..text.floor_char_boundary(MAX - 3)].to_owned();
    cut.push('…');
    cut
}

/// `Kind namespace/name` of a primary object.
pub(crate) fn describe(ctx: &Ctx, o: &Object) -> String {
    match o.namespace() {
        Some(ns) => format!("{} {ns}/{}", ctx.primary.kind, o.name()),
        None => format!("{} {}", ctx.primary.kind, o.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_notes_are_cut_at_one_kilobyte() {
        assert_eq!(event_note("short"), "short");
        let long = "é".repeat(1000);
        let cut = event_note(&long);
        assert!(cut.len() <= 1024 && cut.ends_with('…'), "{}", cut.len());
    }
}
