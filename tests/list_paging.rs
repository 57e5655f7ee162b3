//! Paged lists against the test API server over loopback HTTP: many pages, consistent
//! snapshots, expired continue tokens, `resourceVersion=0`, selectors.

mod common;

use std::collections::BTreeSet;

use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client, ListParams};

fn seeded(n: usize) -> (ApiServer, Api<DynamicObject>) {
    let server = ApiServer::builder().resource(&pods()).start();
    for i in 0..n {
        let ns = if i % 3 == 0 { "other" } else { "lab" };
        server
            .create(&pods(), pod(ns, &format!("pod-{i:04}"), "Pending"))
            .unwrap();
    }
    let client = Client::new(server.client_config()).unwrap();
    (server, Api::all_with(client, &pods()))
}

fn names(items: &[DynamicObject]) -> Vec<String> {
    items.iter().map(|o| o.metadata.key()).collect()
}

#[test]
fn list_all_walks_every_page_and_counts_down() {
    let (server, api) = seeded(1234);
    let pages: Vec<_> = api
        .pages(&ListParams::default().limit(100))
        .map(Result::unwrap)
        .collect();
    assert_eq!(pages.len(), 13);
    let remaining: Vec<_> = pages
        .iter()
        .map(|p| p.list.metadata.remaining_item_count)
        .collect();
    assert_eq!(remaining[0], Some(1134));
    assert_eq!(remaining[11], Some(34));
    assert_eq!(remaining[12], None);
    assert!(pages.iter().all(|p| !p.restarted));
    assert!(pages
        .iter()
        .all(|p| p.list.kind.as_deref() == Some("PodList")));
    let rvs: BTreeSet<_> = pages
        .iter()
        .map(|p| p.list.metadata.resource_version.clone())
        .collect();
    assert_eq!(
        rvs.len(),
        1,
        "every page is served at the first page's version"
    );

    let all = api.list_all(&ListParams::default().limit(100)).unwrap();
    assert_eq!(all.items.len(), 1234);
    let keys = names(&all.items);
    let unique: BTreeSet<_> = keys.iter().collect();
    assert_eq!(unique.len(), 1234);
    assert!(all.metadata.continue_token.is_none());
    // The default page size is client-go's 500.
    let before = server.requests().len();
    api.list_all(&ListParams::default()).unwrap();
    let sent = &server.requests()[before..];
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(sent[0].contains("limit=500"), "{sent:?}");
}

#[test]
fn pages_are_a_consistent_snapshot_while_objects_change() {
    let (server, api) = seeded(300);
    let mut pages = api.pages(&ListParams::default().limit(50));
    let first = pages.next().unwrap().unwrap();
    let list_rv = first.list.metadata.resource_version.clone().unwrap();
    // Change the world between pages.
    server.delete(&pods(), Some("lab"), "pod-0299").unwrap();
    server
        .create(&pods(), pod("lab", "pod-9999", "Pending"))
        .unwrap();
    server
        .patch(
            &pods(),
            Some("lab"),
            "pod-0298",
            &serde_json::json!({"status": {"phase": "Running"}}),
        )
        .unwrap();
    let mut items = first.list.items;
    for p in pages {
        let p = p.unwrap();
        assert_eq!(
            p.list.metadata.resource_version.as_deref(),
            Some(list_rv.as_str())
        );
        items.extend(p.list.items);
    }
    let keys = names(&items);
    assert_eq!(items.len(), 300);
    assert!(
        keys.contains(&"lab/pod-0299".to_string()),
        "deleted later, still in the snapshot"
    );
    assert!(
        !keys.contains(&"lab/pod-9999".to_string()),
        "created later, not in the snapshot"
    );
    let p298 = items
        .iter()
        .find(|o| o.metadata.name() == "pod-0298")
        .unwrap();
    let rv298: u64 = p298.metadata.resource_version().parse().unwrap();
    assert!(
        rv298 <= list_rv.parse().unwrap(),
        "pod-0298 as of the snapshot"
    );
}

#[test]
fn expired_continue_token_restarts_as_one_full_list() {
    let (server, api) = seeded(250);
    // The token of page one expires before page two is read. (Injected rather than caused by
    // compaction: the pager fetches page two while page one is being decoded, and a page
    // fetched before the expiry is rightly served.)
    server
        .create(&pods(), pod("lab", "late", "Pending"))
        .unwrap();
    server.inject(Target::ListContinue, Fault::status(410));
    let mut pages = api.pages(&ListParams::default().limit(100));
    let first = pages.next().unwrap().unwrap();
    assert_eq!(first.list.items.len(), 100);
    let second = pages.next().unwrap().unwrap();
    assert!(second.restarted, "the pager says to drop what came before");
    assert_eq!(second.list.items.len(), 251, "one full list, no limit");
    assert!(pages.next().is_none());
    let sent = server.requests();
    let last = sent.last().unwrap();
    assert!(
        !last.contains("continue=") && !last.contains("limit="),
        "{last}"
    );
    assert!(sent.iter().any(|r| r.contains("continue=")), "{sent:?}");

    // list_all hides the restart: one consistent list, no duplicates.
    server.inject(Target::ListContinue, Fault::status(410));
    let all = api.list_all(&ListParams::default().limit(100)).unwrap();
    assert_eq!(all.items.len(), 251);
    let unique: BTreeSet<_> = names(&all.items).into_iter().collect();
    assert_eq!(unique.len(), 251);

    // The item iterator skips what it already yielded.
    server.inject(Target::ListContinue, Fault::status(410));
    let items: Vec<_> = api
        .list_items(&ListParams::default().limit(100))
        .map(Result::unwrap)
        .collect();
    assert_eq!(items.len(), 251);
}

#[test]
fn expired_continue_status_matches_the_capture() {
    let (server, api) = seeded(30);
    let first = api.list(&ListParams::default().limit(10)).unwrap();
    server
        .create(&pods(), pod("lab", "late", "Pending"))
        .unwrap();
    server.compact();
    let token = first.metadata.continue_token.unwrap();
    let url = format!("{}/api/v1/pods?limit=10&continue={token}", server.url());
    let (code, body) = raw_get(&url, None);
    assert_eq!(code, 410);
    let got: serde_json::Value = serde_json::from_str(&body).unwrap();
    let want: serde_json::Value =
        serde_json::from_slice(&fixture("continue-expired.json")).unwrap();
    for field in ["kind", "apiVersion", "status", "message", "reason", "code"] {
        assert_eq!(got[field], want[field], "{field}");
    }
    assert!(got["metadata"]["continue"].is_string());
}

#[test]
fn resource_version_zero_ignores_the_limit() {
    let (server, api) = seeded(60);
    let list = api.list(&ListParams::default().limit(10).at("0")).unwrap();
    assert_eq!(list.items.len(), 60);
    assert!(list.metadata.continue_token.is_none());
    // Like the capture: core list items come without kind/apiVersion.
    assert!(list.items[0].kind.is_none());
    let (_, body) = raw_get(
        &format!("{}/api/v1/namespaces/lab/pods?limit=2", server.url()),
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["kind"], "PodList");
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(v["metadata"]["remainingItemCount"], 38);
    assert!(v["items"][0].get("kind").is_none());
}

#[test]
fn selectors_and_namespaces_filter_lists() {
    let (server, _api) = seeded(90);
    let client = Client::new(server.client_config()).unwrap();
    let lab: Api<DynamicObject> = Api::namespaced_with(client.clone(), "lab", &pods());
    assert_eq!(
        lab.list_all(&ListParams::default().limit(7))
            .unwrap()
            .items
            .len(),
        60
    );
    let all: Api<DynamicObject> = Api::all_with(client, &pods());
    let one = all
        .list_all(&ListParams::default().labels("idx in (pod-0001,pod-0003),app=lab"))
        .unwrap();
    let got: BTreeSet<String> = names(&one.items).into_iter().collect();
    let want: BTreeSet<String> = ["lab/pod-0001", "other/pod-0003"].map(String::from).into();
    assert_eq!(got, want);
    let by_name = all
        .list_all(&ListParams::default().fields("metadata.name=pod-0005"))
        .unwrap();
    assert_eq!(by_name.items.len(), 1);
    let err = all
        .list(&ListParams::default().labels("a in b"))
        .unwrap_err();
    assert_eq!(err.code(), Some(400), "{err}");
}

#[test]
fn exact_list_at_a_compacted_version_is_gone() {
    let (server, api) = seeded(5);
    let mut lp = ListParams::default().at("2");
    lp.resource_version_match = Some("Exact".into());
    assert_eq!(
        api.list(&lp).unwrap().items.len(),
        1,
        "the state at version 2"
    );
    server.compact();
    let err = api.list(&lp).unwrap_err();
    assert!(err.is_gone(), "{err}");
    let want: serde_json::Value =
        serde_json::from_slice(&fixture("list-pods-410-exact-compacted-rv.json")).unwrap();
    assert_eq!(
        err.status().unwrap().message,
        want["message"].as_str().unwrap()
    );
}

/// The pages of one list are one logical read: only the first takes a rate-limit token, so
/// a large list is never paced page by page (issue: 200 pages at QPS 5 waited ~38 s).
#[test]
fn the_pages_after_the_first_do_not_wait_for_the_rate_limiter() {
    let server = ApiServer::builder().resource(&pods()).start();
    for i in 0..30 {
        server
            .create(&pods(), pod("lab", &format!("p-{i:02}"), "Pending"))
            .unwrap();
    }
    let mut config = server.client_config();
    (config.qps, config.burst) = (1.0, 1);
    let client = Client::new(config).unwrap();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &pods());
    let list = api
        .list_all(&ListParams {
            limit: Some(5),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(list.items.len(), 30);
    let stats = client.rate_limiter_stats().unwrap();
    assert_eq!((stats.requests, stats.delayed), (1, 0), "{stats:?}");
}
