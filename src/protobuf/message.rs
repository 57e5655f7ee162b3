//! [`Message`]: a handle on one message type of the generated tables, found by the
//! envelope's `apiVersion` and `kind` or by its protobuf name.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::descriptor::{Kind, MessageDesc, MESSAGES, PACKAGES, REPEATED};

/// A built-in message type (an index into the generated tables); `Copy` and cheap.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Message(pub(crate) u16);

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Message({}.{})",
            PACKAGES[self.desc().package as usize].0,
            self.desc().name
        )
    }
}

impl Message {
    pub(crate) fn desc(self) -> &'static MessageDesc {
        &MESSAGES[self.0 as usize]
    }

    /// The protobuf name, e.g. `k8s.io.api.core.v1.Pod`.
    pub fn proto_name(self) -> String {
        format!(
            "{}.{}",
            PACKAGES[self.desc().package as usize].0,
            self.desc().name
        )
    }

    /// The item type of a list message (`PodList` → `Pod`): the message of its repeated
    /// field 2 (`items`), when the message's name ends in `List`.
    pub fn list_item(self) -> Option<Message> {
        let desc = self.desc();
        if !desc.name.ends_with("List") {
            return None;
        }
        match desc.field(2) {
            Some(field) if field.has(REPEATED) => match field.2 {
                Kind::M(index) => Some(Message(index)),
                _ => None,
            },
            _ => None,
        }
    }
}

fn by_type() -> &'static HashMap<(&'static str, &'static str), Message> {
    static MAP: OnceLock<HashMap<(&'static str, &'static str), Message>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut map = HashMap::new();
        for (i, desc) in MESSAGES.iter().enumerate() {
            let api_version = PACKAGES[desc.package as usize].1;
            if !api_version.is_empty() {
                map.entry((api_version, desc.name))
                    .or_insert(Message(i as u16));
            }
        }
        map
    })
}

/// The message of a built-in kind, by the envelope's `apiVersion` and `kind`: `v1` `Pod`,
/// `apps/v1` `DeploymentList`, `meta.k8s.io/v1` `PartialObjectMetadataList`. As
/// kube-apiserver's own decoding does, `v1` and `""` fall back to `meta/v1` (`Status`,
/// `APIResourceList`, `APIVersions`, `APIGroupList`). `None` for a type the tables do not
/// hold (a custom resource).
///
/// ```
/// # #[cfg(feature = "protobuf")] {
/// use kube_informer::protobuf::message_for;
/// let pods = message_for("v1", "PodList").unwrap();
/// assert_eq!(pods.list_item().unwrap().proto_name(), "k8s.io.api.core.v1.Pod");
/// assert_eq!(message_for("v1", "Status").unwrap().proto_name(), "k8s.io.apimachinery.pkg.apis.meta.v1.Status");
/// assert!(message_for("example.com/v1", "Widget").is_none());
/// # }
/// ```
pub fn message_for(api_version: &str, kind: &str) -> Option<Message> {
    let map = by_type();
    if let Some(m) = map.get(&(api_version, kind)) {
        return Some(*m);
    }
    if api_version.is_empty() || api_version == "v1" {
        return map.get(&("meta.k8s.io/v1", kind)).copied();
    }
    None
}

/// The message with this protobuf name (`k8s.io.api.core.v1.Pod`,
/// `k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta`).
pub fn message_by_name(proto_name: &str) -> Option<Message> {
    let (package, name) = proto_name.rsplit_once('.')?;
    MESSAGES
        .iter()
        .position(|d| d.name == name && PACKAGES[d.package as usize].0 == package)
        .map(|i| Message(i as u16))
}
