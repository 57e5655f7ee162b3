//! Work queue rules: dedup while dirty, re-add while processing, delays (earliest wins, in
//! order), rate-limiter sequences, shutdown with drain, no lost item under many producers
//! and consumers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::workqueue::{
    default_controller_rate_limiter, Bucket, DelayingQueue, ItemExponential, ItemFastSlow, MaxOf,
    Queue, RateLimiter, RateLimitingQueue,
};
use parking_lot::Mutex;

const PATIENCE: Duration = Duration::from_secs(30);

#[test]
fn an_item_added_many_times_while_waiting_is_processed_once() {
    let q = Queue::new();
    for _ in 0..5 {
        q.add("a");
    }
    q.add("b");
    assert_eq!(q.len(), 2);
    assert_eq!(q.get(), Some("a"));
    assert_eq!(q.get(), Some("b"));
    assert!(q.is_empty());
    let m = q.metrics();
    assert_eq!((m.adds, m.gets, m.processing), (2, 2, 2));
}

#[test]
fn an_item_added_while_processing_is_queued_again_after_done() {
    let q = Queue::new();
    q.add("a");
    let item = q.get().unwrap();
    q.add("a");
    q.add("a");
    assert!(
        q.is_empty(),
        "not handed to a second worker while in processing"
    );
    q.done(&item);
    assert_eq!(q.len(), 1);
    assert_eq!(q.get(), Some("a"));
    q.done(&"a");
    assert!(q.is_empty());
}

#[test]
fn get_blocks_until_an_item_or_shutdown_and_drains_after_shutdown() {
    let q = Arc::new(Queue::new());
    let q2 = Arc::clone(&q);
    let waiter = std::thread::spawn(move || q2.get());
    q.add(7);
    assert_eq!(waiter.join().unwrap(), Some(7));
    q.add(8);
    q.shutdown();
    q.add(9);
    assert_eq!(
        q.get(),
        Some(8),
        "queued items still come out after shutdown"
    );
    assert_eq!(q.get(), None, "then None; adds after shutdown are ignored");
    let q3 = Arc::new(Queue::<u32>::new());
    let q4 = Arc::clone(&q3);
    let blocked = std::thread::spawn(move || q4.get());
    q3.shutdown();
    assert_eq!(blocked.join().unwrap(), None);
}

#[test]
fn shutdown_with_drain_waits_for_items_in_processing() {
    let q = Arc::new(Queue::new());
    q.add("job");
    let item = q.get().unwrap();
    assert!(
        !q.shutdown_with_drain(Duration::from_millis(50)),
        "times out while a job runs"
    );
    let q2 = Arc::clone(&q);
    let worker = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        q2.done(&item);
    });
    assert!(q.shutdown_with_drain(PATIENCE));
    worker.join().unwrap();
}

#[test]
fn delayed_items_come_out_in_ready_order_and_the_earliest_time_wins() {
    let q = DelayingQueue::new("test-delays").unwrap();
    let start = Instant::now();
    q.add_after("late", Duration::from_millis(300));
    q.add_after("early", Duration::from_millis(100));
    q.add_after("now", Duration::ZERO);
    q.add_after("moved", Duration::from_secs(3600));
    q.add_after("moved", Duration::from_millis(200)); // earlier wins
    q.add_after("early", Duration::from_secs(3600)); // later loses
    assert_eq!(q.waiting(), 3);
    let mut order = Vec::new();
    for _ in 0..4 {
        let item = q.get_timeout(PATIENCE).expect("an item");
        order.push(item);
        q.done(&item);
    }
    assert_eq!(order, ["now", "early", "moved", "late"]);
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "nothing came early"
    );
    assert!(start.elapsed() < Duration::from_secs(3600));
    q.shutdown();
}

#[test]
fn rate_limiter_sequences() {
    let exp = ItemExponential::new(Duration::from_millis(5), Duration::from_secs(1000));
    let delays: Vec<u128> = (0..5).map(|_| exp.when(&"x").as_millis()).collect();
    assert_eq!(delays, [5, 10, 20, 40, 80]);
    assert_eq!(exp.num_requeues(&"x"), 5);
    assert_eq!(exp.when(&"y"), Duration::from_millis(5), "per item");
    for _ in 0..100 {
        exp.when(&"x");
    }
    assert_eq!(exp.when(&"x"), Duration::from_secs(1000), "capped");
    exp.forget(&"x");
    assert_eq!(exp.num_requeues(&"x"), 0);
    assert_eq!(exp.when(&"x"), Duration::from_millis(5));

    let fs = ItemFastSlow::new(Duration::from_millis(5), Duration::from_secs(10), 3);
    let d: Vec<Duration> = (0..5).map(|_| fs.when(&"x")).collect();
    assert_eq!(d[..3], [Duration::from_millis(5); 3]);
    assert_eq!(d[3..], [Duration::from_secs(10); 2]);

    let bucket = Bucket::new(10.0, 100);
    let free = (0..100)
        .filter(|_| RateLimiter::<&str>::when(&bucket, &"x").is_zero())
        .count();
    assert_eq!(free, 100, "the burst is free");
    let next = RateLimiter::<&str>::when(&bucket, &"x");
    assert!(
        next > Duration::ZERO && next <= Duration::from_millis(100),
        "{next:?}"
    );

    let max: MaxOf<&str> = MaxOf::new(vec![
        Box::new(ItemExponential::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(ItemFastSlow::new(
            Duration::from_millis(50),
            Duration::from_secs(1),
            1,
        )),
    ]);
    assert_eq!(max.when(&"x"), Duration::from_millis(50));
    assert_eq!(max.when(&"x"), Duration::from_secs(1));
    assert_eq!(max.num_requeues(&"x"), 2);
    max.forget(&"x");
    assert_eq!(max.num_requeues(&"x"), 0);

    let default = default_controller_rate_limiter::<String>();
    assert_eq!(default.when(&"k".to_string()), Duration::from_millis(5));
}

#[test]
fn rate_limited_retries_wait_and_count() {
    let q: RateLimitingQueue<String> = RateLimitingQueue::with_rate_limiter(
        "test-retries",
        Box::new(ItemExponential::new(
            Duration::from_millis(20),
            Duration::from_secs(1),
        )),
    )
    .unwrap();
    let start = Instant::now();
    q.add_rate_limited("k".into());
    q.add_rate_limited("k".into());
    assert_eq!(q.num_requeues(&"k".to_string()), 2);
    let item = q.get_timeout(PATIENCE).unwrap();
    assert!(start.elapsed() >= Duration::from_millis(20));
    q.forget(&item);
    q.done(&item);
    assert_eq!(q.num_requeues(&"k".to_string()), 0);
    assert_eq!(q.metrics().retries, 2);
    q.shutdown();
}

#[test]
fn many_producers_and_consumers_lose_nothing() {
    let q = Arc::new(Queue::<u32>::new());
    let seen: Arc<Mutex<HashMap<u32, usize>>> = Arc::default();
    let in_flight: Arc<Mutex<std::collections::HashSet<u32>>> = Arc::default();
    let overlaps = Arc::new(AtomicUsize::new(0));
    let consumers: Vec<_> = (0..4)
        .map(|_| {
            let (q, seen, in_flight, overlaps) =
                (q.clone(), seen.clone(), in_flight.clone(), overlaps.clone());
            std::thread::spawn(move || {
                while let Some(item) = q.get() {
                    if !in_flight.lock().insert(item) {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    *seen.lock().entry(item).or_default() += 1;
                    std::thread::yield_now();
                    in_flight.lock().remove(&item);
                    q.done(&item);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let q = q.clone();
            std::thread::spawn(move || {
                for i in 0..2000u32 {
                    q.add((i * 7 + p) % 1000);
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    assert!(q.shutdown_with_drain(PATIENCE));
    for c in consumers {
        c.join().unwrap();
    }
    let seen = seen.lock();
    assert_eq!(seen.len(), 1000, "every item was processed");
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "never two workers on one item"
    );
    let m = q.metrics();
    assert!(m.gets as usize >= 1000 && m.gets <= m.adds);
}

/// Fault 10 of the review: peeking at a delay counted a failure and took a token.
#[test]
fn peek_delay_changes_nothing() {
    let q: RateLimitingQueue<String> = RateLimitingQueue::with_rate_limiter(
        "test-peek",
        Box::new(default_controller_rate_limiter()),
    )
    .unwrap();
    let k = "k".to_string();
    for _ in 0..500 {
        assert_eq!(q.peek_delay(&k), Duration::from_millis(5));
    }
    assert_eq!(q.num_requeues(&k), 0);
    q.add_rate_limited(k.clone());
    assert_eq!(q.peek_delay(&k), Duration::from_millis(10));
    assert_eq!(q.num_requeues(&k), 1);
    q.shutdown();
}

/// Fault 9 of the review: durations too large to add to an `Instant` panicked.
#[test]
fn huge_delays_and_timeouts_do_not_panic() {
    let q: DelayingQueue<&str> = DelayingQueue::new("test-huge").unwrap();
    q.add_after("never", Duration::MAX);
    assert_eq!(q.waiting(), 1);
    q.add("now");
    assert_eq!(q.get_timeout(Duration::MAX), Some("now"));
    q.done(&"now");
    assert!(q.shutdown_with_drain(Duration::MAX));
    let bucket = kube_informer::workqueue::Bucket::new(1e-300, 1);
    let _ = RateLimiter::<u8>::when(&bucket, &0);
    assert_eq!(RateLimiter::<u8>::when(&bucket, &0), Duration::MAX);
    let zero = kube_informer::workqueue::Bucket::new(0.0, 1);
    let _ = RateLimiter::<u8>::when(&zero, &0);
    assert_eq!(RateLimiter::<u8>::when(&zero, &0), Duration::MAX);
    let mut b = kube_informer::cache::Backoff::new(Duration::MAX, Duration::MAX, Duration::MAX);
    assert!(b.next_delay() >= Duration::MAX / 2);
    assert!(b.next_delay() >= Duration::MAX / 2);
}

#[test]
fn unfinished_work_adds_up_every_item_in_processing() {
    let q = Queue::<u32>::new();
    q.add(1);
    q.add(2);
    let a = q.get().unwrap();
    let b = q.get().unwrap();
    let m = q.metrics();
    assert_eq!(m.processing, 2);
    assert!(m.unfinished_work >= m.longest_running);
    q.done(&a);
    q.done(&b);
    assert_eq!(q.metrics().unfinished_work, Duration::ZERO);
}
