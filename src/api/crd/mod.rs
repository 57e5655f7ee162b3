//! CustomResourceDefinitions generated from Rust types (feature `crd`).
//!
//! A custom resource's CRD carries an OpenAPI v3 schema that kube-apiserver validates and
//! prunes every object with. Written by hand in YAML it drifts from the Rust types the
//! controller decodes; [`CrdBuilder`] writes it from them instead, through the
//! [`JsonSchema`](schemars::JsonSchema) derive of [schemars](https://docs.rs/schemars) 1.x
//! (the schema crate kube-rs uses).
//!
//! **Which schemars.** Depend on `schemars = "1"` yourself, as the examples do: its default
//! `derive` feature gives `#[derive(JsonSchema)]`, and cargo builds one schemars for both
//! requirements, so your derive and [`CrdBuilder`] agree. (A `schemars = "0.8"` would be
//! another crate, whose `JsonSchema` `CrdBuilder` does not take: a compile error.) This
//! crate enables schemars without `derive` and re-exports it as [`schemars`]: the very
//! crate `CrdBuilder` uses, to name its types without a dependency of your own. The derive
//! works through the re-export only when something in the build turns `derive` on (your
//! own dependency does) and the type says where schemars is, since the derive's code names
//! `schemars::` (tested below):
//!
//! ```
//! use kube_informer::api::crd::{schemars, CrdBuilder};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! #[schemars(crate = "kube_informer::api::crd::schemars")]
//! struct GadgetSpec {
//!     size: i32,
//! }
//! let crd = CrdBuilder::new::<GadgetSpec>("lab.example.com", "v1", "Gadget").build()?;
//! assert_eq!(crd["spec"]["names"]["plural"], "gadgets");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! kube-apiserver refuses a schema that is not *structural*, and schemars writes plain JSON
//! Schema, so the schema of each type is rewritten (see `structural.rs`): no `$ref` (every
//! type inline; recursive types are refused by name), `Option<T>` as `nullable: true`, enums
//! of unit variants as `type: string` with their `enum`, enums whose variants carry data as
//! one object with the variants' fields, untagged integer-or-string enums as
//! `x-kubernetes-int-or-string`, `serde_json::Value` and maps of it as
//! `x-kubernetes-preserve-unknown-fields`, other maps as `additionalProperties`, and
//! `metadata` left to the server (`type: object`). serde's attributes are honoured as
//! schemars reads them: `rename`, `rename_all`, `skip`, `flatten`, `default`, `tag`,
//! `untagged`. What has no structural form (an enum mixing unit variants and variants with
//! data, a tuple, a recursive type) is a [`CrdError`] naming the field, with what to do
//! instead (often `#[schemars(with = "serde_json::Value")]` or
//! [`preserve_unknown_fields`]).
//!
//! Why a builder and not a derive: a derive needs a proc-macro crate of ours, and the types
//! already derive `JsonSchema` (and `Deserialize`) for their shape; the builder adds only
//! what a derive's attributes would (names, scope, versions, subresources, columns), as
//! ordinary method calls a reader can follow and an editor can complete. It works with the
//! [`resource!`](crate::resource) macro's types through [`CrdBuilder::for_resource`].
//!
//! Create the result through [`Api<DynamicObject>`](crate::Api) (or write it out with
//! [`CrdBuilder::build_yaml`]); the test server learns a CRD created through its API, so a
//! test sees the validation a cluster would:
//!
//! ```
//! use kube_informer::api::crd::CrdBuilder;
//! use kube_informer::api::{ApiResource, DynamicObject};
//! use kube_informer::testing::ApiServer;
//! use kube_informer::{Api, Client, PostParams};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use serde_json::json;
//!
//! #[derive(Serialize, Deserialize, JsonSchema)]
//! struct WidgetSpec {
//!     #[schemars(range(min = 0))]
//!     size: i32,
//! }
//!
//! let crd = CrdBuilder::new::<WidgetSpec>("lab.example.com", "v1", "Widget").build()?;
//!
//! let server = ApiServer::start();
//! let client = Client::new(server.client_config())?;
//! let crds = ApiResource::new("apiextensions.k8s.io", "v1", "CustomResourceDefinition",
//!     "customresourcedefinitions", false);
//! Api::<DynamicObject>::all_with(client.clone(), &crds).create(&PostParams::default(), &crd)?;
//!
//! let widgets = ApiResource::new("lab.example.com", "v1", "Widget", "widgets", true);
//! let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &widgets);
//! let widget = |name: &str, size: i32| json!({"apiVersion": "lab.example.com/v1",
//!     "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}});
//! api.create(&PostParams::default(), &widget("good", 3))?;
//! let refused = api.create(&PostParams::default(), &widget("bad", -1)).unwrap_err();
//! assert_eq!(refused.code(), Some(422));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod builder;
mod error;
mod fields;
mod structural;

pub use builder::{CrdBuilder, PrinterColumn};
pub use error::CrdError;
pub use fields::{int_or_string, preserve_unknown_fields};
pub use schemars;

#[cfg(test)]
mod tests;
