//! Shared informers over loopback HTTP: many handlers, slow and panicking ones, handlers
//! added late and removed, resync, transforms, coalescing under a stalled handler, faults
//! during churn, listers and the factory.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::view::View;
use common::*;
use kube_informer::api::{DynamicObject, LabelSelector};
use kube_informer::cache::{
    FactoryOptions, FilteringHandler, HandlerFns, SharedInformerFactory, NAMESPACE_INDEX,
};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client};
use parking_lot::Mutex;

fn server_with(n: usize) -> ApiServer {
    let server = ApiServer::builder()
        .resource(&pods())
        .bookmark_interval(Duration::from_millis(200))
        .start();
    for i in 0..n {
        let ns = if i % 2 == 0 { "lab" } else { "prod" };
        server
            .create(&pods(), pod(ns, &format!("pod-{i:04}"), "Pending"))
            .unwrap();
    }
    server
}

fn converged(server: &ApiServer, view: &View) -> bool {
    server.keys_and_versions(&pods()) == view.snapshot()
}

#[test]
fn slow_and_panicking_handlers_do_not_hold_back_a_fast_one() {
    let server = server_with(100);
    let panics = Arc::new(Mutex::new(Vec::<String>::new()));
    let p = panics.clone();
    let config = fast_config().on_handler_panic(move |m: &str| p.lock().push(m.to_owned()));
    let inf = pods_informer(&server, config);
    let fast = View::default();
    let fast_reg = inf.add_event_handler(fast.clone()).unwrap();
    // The slow handler blocks until released.
    let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(0);
    let slow = View::default();
    let mut slow_inner = slow.clone();
    let slow_reg = inf
        .add_event_handler(HandlerFns::new().on_add(move |o, i| {
            let _ = release_rx.recv();
            kube_informer::cache::EventHandler::on_add(&mut slow_inner, o, i);
        }))
        .unwrap();
    let seen_by_panicky = Arc::new(AtomicUsize::new(0));
    let s = seen_by_panicky.clone();
    let panicky = inf
        .add_event_handler(HandlerFns::new().on_add(move |o: Arc<DynamicObject>, _| {
            s.fetch_add(1, Ordering::SeqCst);
            if o.metadata.name().ends_with('7') {
                panic!("handler bug on {}", o.metadata.name());
            }
        }))
        .unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    assert!(fast_reg.wait_for_sync(PATIENCE));
    churn(&server, 0, 60);
    wait_until("the fast handler sees the server's state", || {
        converged(&server, &fast)
    });
    assert!(fast.violations().is_empty(), "{:?}", fast.violations());
    assert!(
        !slow_reg.has_synced(),
        "the slow handler is still stuck on its first object"
    );
    assert!(
        slow_reg.backlog() > 50,
        "its backlog is observable: {}",
        slow_reg.backlog()
    );
    wait_until("the panicky handler saw every add", || {
        seen_by_panicky.load(Ordering::SeqCst) >= 140
    });
    assert_eq!(panicky.panics(), panics.lock().len() as u64);
    assert!(panicky.panics() >= 10, "{}", panicky.panics());
    assert!(
        panics.lock()[0].contains("handler bug on"),
        "{:?}",
        panics.lock()[0]
    );
    // Release the slow one; it catches up with only add events (the slow closure ignores others).
    drop(release_tx);
    assert!(slow_reg.wait_for_sync(PATIENCE));
    inf.stop();
}

#[test]
fn a_handler_added_later_gets_the_cache_then_live_events_with_no_gap_or_duplicate() {
    let server = server_with(300);
    let inf = pods_informer(&server, fast_config());
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    let churner = {
        let url_server = server.client_config();
        let api: Api<DynamicObject> =
            Api::namespaced_with(Client::new(url_server).unwrap(), "lab", &pods());
        std::thread::spawn(move || {
            for i in 0..150 {
                let name = format!("late-{i}");
                api.create(
                    &kube_informer::PostParams::default(),
                    &pod("lab", &name, "Pending"),
                )
                .unwrap();
                if i % 2 == 0 {
                    api.delete(&name, &kube_informer::DeleteParams::default())
                        .unwrap();
                }
            }
        })
    };
    let late = View::default();
    let reg = inf.add_event_handler(late.clone()).unwrap();
    assert!(reg.wait_for_sync(PATIENCE));
    assert!(late.0.lock().initial_adds >= 300);
    churner.join().unwrap();
    let deadline = std::time::Instant::now() + PATIENCE;
    while !converged(&server, &late) {
        if std::time::Instant::now() > deadline {
            let want: std::collections::BTreeSet<_> =
                server.keys_and_versions(&pods()).into_iter().collect();
            let got: std::collections::BTreeSet<_> = late.snapshot().into_iter().collect();
            let cache: std::collections::BTreeSet<_> =
                inf.store().keys_and_versions().into_iter().collect();
            panic!(
                "late handler: missing {:?}\nextra {:?}\ncache vs server missing {:?}\nviolations {:?}\nbacklog {}",
                want.difference(&got).take(5).collect::<Vec<_>>(),
                got.difference(&want).take(5).collect::<Vec<_>>(),
                want.difference(&cache).take(5).collect::<Vec<_>>(),
                late.violations(),
                reg.backlog()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(late.violations().is_empty(), "{:?}", late.violations());
    inf.stop();
}

#[test]
fn removing_a_handler_stops_its_deliveries() {
    let server = server_with(5);
    let inf = pods_informer(&server, fast_config());
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let reg = inf
        .add_event_handler(HandlerFns::new().on_add(move |_: Arc<DynamicObject>, _| {
            c.fetch_add(1, Ordering::SeqCst);
        }))
        .unwrap();
    let keeper = View::default();
    inf.add_event_handler(keeper.clone()).unwrap();
    inf.start().unwrap();
    assert!(reg.wait_for_sync(PATIENCE));
    assert_eq!(count.load(Ordering::SeqCst), 5);
    inf.remove_event_handler(reg);
    churn(&server, 0, 9);
    wait_until("the remaining handler converges", || {
        converged(&server, &keeper)
    });
    assert_eq!(count.load(Ordering::SeqCst), 5);
    inf.stop();
}

#[test]
fn every_handler_view_matches_the_server_after_faults_during_churn() {
    let server = server_with(1000);
    let inf = pods_informer(&server, fast_config());
    let views: Vec<View> = (0..3).map(|_| View::default()).collect();
    for v in &views {
        inf.add_event_handler(v.clone()).unwrap();
    }
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    let faults = [
        (Target::Watch, Fault::CloseAfterEvents(20)),
        (Target::Watch, Fault::status(410)),
        (Target::List, Fault::status(500)),
        (Target::Watch, Fault::GarbageLine),
        (Target::Watch, Fault::CloseAfterBytes(10_000)),
    ];
    for (round, (t, f)) in faults.into_iter().enumerate() {
        server.inject(t, f);
        server.disconnect_all();
        churn(&server, round, 200);
        for i in (round * 50..round * 50 + 50).map(|i| i % 1000) {
            let ns = if i % 2 == 0 { "lab" } else { "prod" };
            let _ = server.delete(&pods(), Some(ns), &format!("pod-{i:04}"));
        }
    }
    for v in &views {
        wait_until("each handler converges", || converged(&server, v));
        assert!(v.violations().is_empty(), "{:?}", v.violations());
    }
    assert_eq!(
        inf.store().keys_and_versions(),
        server.keys_and_versions(&pods())
    );
    inf.stop();
}

#[test]
fn resync_is_per_handler_and_transforms_apply_before_caching() {
    let server = server_with(4);
    let config = fast_config().transform(kube_informer::cache::strip_managed_fields());
    server
        .patch(
            &pods(),
            Some("lab"),
            "pod-0000",
            &serde_json::json!({"metadata": {"managedFields": [{"manager": "x"}]}}),
        )
        .unwrap();
    let inf = pods_informer(&server, config);
    let resyncing = View::default();
    let quiet = View::default();
    inf.add_event_handler_with_resync(resyncing.clone(), Duration::from_millis(100))
        .unwrap();
    inf.add_event_handler(quiet.clone()).unwrap();
    inf.start().unwrap();
    wait_until("two resync rounds", || resyncing.0.lock().resyncs >= 8);
    assert_eq!(
        quiet.0.lock().updates,
        0,
        "no resync for a handler that did not ask"
    );
    let cached = inf.lister().get(Some("lab"), "pod-0000").unwrap();
    assert!(cached.metadata.managed_fields.is_none());
    inf.stop();
}

#[test]
fn a_stalled_handler_holds_a_bounded_backlog_and_still_converges() {
    let server = server_with(10);
    let config = fast_config().max_backlog(5);
    let inf = pods_informer(&server, config);
    let gate = Arc::new(Mutex::new(()));
    let stalled = View::default();
    let view = stalled.clone();
    let g = gate.clone();
    let hold = gate.lock();
    let mut v1 = view.clone();
    let mut v2 = view.clone();
    let mut v3 = view.clone();
    let g1 = g.clone();
    let g2 = g.clone();
    let reg = inf
        .add_event_handler(
            HandlerFns::new()
                .on_add(move |o, i| {
                    drop(g.lock());
                    kube_informer::cache::EventHandler::on_add(&mut v1, o, i)
                })
                .on_update(move |o, n| {
                    drop(g1.lock());
                    kube_informer::cache::EventHandler::on_update(&mut v2, o, n)
                })
                .on_delete(move |d| {
                    drop(g2.lock());
                    kube_informer::cache::EventHandler::on_delete(&mut v3, d)
                }),
        )
        .unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    // Hundreds of changes to ten objects while the handler is stuck.
    for round in 0..40 {
        for i in 0..10 {
            let ns = if i % 2 == 0 { "lab" } else { "prod" };
            server
                .patch(
                    &pods(),
                    Some(ns),
                    &format!("pod-{i:04}"),
                    &serde_json::json!({"metadata": {"labels": {"round": round.to_string()}}}),
                )
                .unwrap();
        }
    }
    churn(&server, 0, 30);
    let informer_view = inf.store();
    wait_until("the informer itself keeps up", || {
        informer_view.keys_and_versions() == server.keys_and_versions(&pods())
    });
    let backlog = reg.backlog();
    assert!(
        backlog <= 5 + 2 * 40,
        "bounded by the channel plus two per object: {backlog}"
    );
    drop(hold);
    wait_until("the stalled handler converges", || {
        converged(&server, &stalled)
    });
    assert!(
        stalled.violations().is_empty(),
        "{:?}",
        stalled.violations()
    );
    inf.stop();
}

#[test]
fn filtering_handler_turns_moves_into_adds_and_deletes() {
    let server = server_with(4);
    let inf = pods_informer(&server, fast_config());
    let running = View::default();
    inf.add_event_handler(FilteringHandler::new(
        |o: &DynamicObject| {
            o.field("status")
                .is_some_and(|s| s.get().contains("Running"))
        },
        running.clone(),
    ))
    .unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    let set = |name: &str, phase: &str| {
        let ns = if name.ends_with('0') || name.ends_with('2') {
            "lab"
        } else {
            "prod"
        };
        server
            .patch(
                &pods(),
                Some(ns),
                name,
                &serde_json::json!({"status": {"phase": phase}}),
            )
            .unwrap();
    };
    set("pod-0000", "Running");
    set("pod-0001", "Running");
    wait_until("two running", || running.snapshot().len() == 2);
    set("pod-0000", "Succeeded");
    wait_until("one running", || running.snapshot().len() == 1);
    assert!(
        running.violations().is_empty(),
        "{:?}",
        running.violations()
    );
    inf.stop();
}

#[test]
fn listers_read_by_name_selector_namespace_and_index() {
    let server = server_with(20);
    let inf = pods_informer(&server, fast_config());
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    let lister = inf.lister();
    assert!(lister.get(Some("lab"), "pod-0000").is_some());
    assert!(lister.get(Some("prod"), "pod-0000").is_none());
    assert_eq!(lister.list_all().len(), 20);
    let sel = LabelSelector::parse("app=lab,idx in (pod-0001,pod-0002,pod-0003)").unwrap();
    let names: Vec<String> = lister.list(&sel).iter().map(|o| o.metadata.key()).collect();
    assert_eq!(names, ["lab/pod-0002", "prod/pod-0001", "prod/pod-0003"]);
    assert_eq!(
        lister
            .list_namespace("prod", &LabelSelector::everything())
            .len(),
        10
    );
    assert_eq!(lister.by_index(NAMESPACE_INDEX, "lab").unwrap().len(), 10);
    assert!(LabelSelector::parse("app in lab")
        .unwrap_err()
        .to_string()
        .contains("position"));
    inf.add_indexers([(
        "phase".to_string(),
        Arc::new(|o: &DynamicObject| {
            Ok(vec![o
                .field("status")
                .map(|s| s.get().to_owned())
                .unwrap_or_default()])
        }) as kube_informer::cache::IndexFn<DynamicObject>,
    )])
    .unwrap();
    assert_eq!(
        lister
            .by_index("phase", r#"{"phase":"Pending"}"#)
            .unwrap()
            .len(),
        20
    );
    inf.stop();
}

#[test]
fn the_factory_shares_informers_and_starts_and_stops_them_together() {
    #[derive(serde::Deserialize)]
    struct SlimPod {
        metadata: kube_informer::api::ObjectMeta,
    }
    impl kube_informer::api::Object for SlimPod {
        type Meta = kube_informer::api::ObjectMeta;
        fn metadata(&self) -> &kube_informer::api::ObjectMeta {
            &self.metadata
        }
        fn metadata_mut(&mut self) -> &mut kube_informer::api::ObjectMeta {
            &mut self.metadata
        }
    }
    impl kube_informer::api::Resource for SlimPod {
        const GROUP: &'static str = "";
        const VERSION: &'static str = "v1";
        const KIND: &'static str = "Pod";
        const PLURAL: &'static str = "pods";
        const NAMESPACED: bool = true;
    }
    let server = server_with(12);
    server
        .create(
            &widgets(),
            serde_json::json!({"metadata": {"name": "w", "namespace": "lab"}, "spec": {}}),
        )
        .unwrap();
    let options = FactoryOptions::new()
        .namespace("lab")
        .strip_managed_fields(true);
    let factory =
        SharedInformerFactory::with_options(Client::new(server.client_config()).unwrap(), options);
    let a = factory.dynamic_informer(&pods());
    let b = factory.dynamic_informer(&pods());
    let typed = factory.informer::<SlimPod>();
    let crd = factory.dynamic_informer(&widgets());
    factory.start().unwrap();
    factory.start().unwrap();
    let synced = factory.wait_for_cache_sync(PATIENCE);
    assert_eq!(synced.informers.len(), 3, "{synced}");
    assert!(synced.all_synced(), "{synced}");
    assert!(
        Arc::ptr_eq(&a.store(), &b.store()),
        "one informer per resource"
    );
    assert_eq!(a.store().len(), 6, "only the lab namespace");
    assert_eq!(typed.store().len(), 6);
    assert_eq!(crd.store().len(), 1);
    assert!(!a.last_sync_resource_version().is_empty());
    wait_until("watching", || a.is_watching());
    factory.shutdown();
    assert!(!a.is_watching());
}

/// Replaced and deleted objects a handler let go of are handed back to the reflector's thread
/// to be freed (the graveyard): however many updates pass, a quiet informer keeps only a
/// bounded number of them alive (256), and none once it is stopped and dropped.
#[test]
fn objects_handlers_let_go_are_freed_and_never_pile_up() {
    let server = server_with(1);
    let inf = pods_informer(&server, fast_config());
    let old_states: Arc<Mutex<Vec<std::sync::Weak<DynamicObject>>>> = Arc::default();
    let updates = Arc::new(AtomicUsize::new(0));
    let (olds, seen) = (Arc::clone(&old_states), Arc::clone(&updates));
    inf.add_event_handler(
        HandlerFns::new()
            .on_update(move |old: Arc<DynamicObject>, _new| {
                olds.lock().push(Arc::downgrade(&old));
                seen.fetch_add(1, Ordering::SeqCst);
            })
            .on_delete(move |_| {}),
    )
    .unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    const UPDATES: usize = 600;
    for _ in 0..UPDATES {
        server.touch(&pods(), Some("lab"), "pod-0000").unwrap();
    }
    server.delete(&pods(), Some("lab"), "pod-0000").unwrap();
    wait_until("every update reached the handler", || {
        updates.load(Ordering::SeqCst) == UPDATES
    });
    wait_until("the deletion reached the cache", || inf.store().is_empty());
    let alive = || {
        old_states
            .lock()
            .iter()
            .filter(|w| w.upgrade().is_some())
            .count()
    };
    // The listener hands the last update's old state over just after the handler returns.
    wait_until("at most 256 old states alive while quiet", || {
        alive() <= 256
    });
    inf.stop();
    drop(inf);
    assert_eq!(alive(), 0, "old states alive after the informer is gone");
}

/// The resync timer starts with the first handler that asks for resyncs, even one added
/// after the informer started (an informer whose handlers never resync runs no timer).
#[test]
fn a_resyncing_handler_added_after_start_gets_its_resyncs() {
    let server = server_with(3);
    let inf = pods_informer(&server, fast_config());
    inf.add_event_handler(View::default()).unwrap();
    inf.start().unwrap();
    assert!(inf.wait_for_cache_sync(PATIENCE));
    let resyncs = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&resyncs);
    inf.add_event_handler_with_resync(
        HandlerFns::new().on_update(move |old: Arc<DynamicObject>, new: Arc<DynamicObject>| {
            if old.metadata.resource_version() == new.metadata.resource_version() {
                r.fetch_add(1, Ordering::SeqCst);
            }
        }),
        Duration::from_millis(50),
    )
    .unwrap();
    wait_until("two rounds of resyncs", || {
        resyncs.load(Ordering::SeqCst) >= 6
    });
    inf.stop();
}
