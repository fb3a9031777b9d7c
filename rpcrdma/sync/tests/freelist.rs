// SPDX-License-Identifier: GPL-2.0

//! `FreeList` on the host: its sequential behaviour, and values given and
//! taken by several threads at once, none lost, duplicated or torn.

use rpcrdma_sync::freelist::{Cell, FreeList, Refused, Word};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

type List<T> = FreeList<T, Vec<Cell<T>>, Vec<Word>>;

fn list<T>(n: usize) -> List<T> {
    let words = (0..List::<T>::words_for(n)).map(|_| Word::new()).collect();
    FreeList::new((0..n).map(|_| Cell::new()).collect(), words).expect("enough words")
}

#[test]
fn refuses_too_few_state_words() {
    for (n, w) in [(1, 0), (64, 0), (65, 1), (200, 3)] {
        let cells: Vec<Cell<u32>> = (0..n).map(|_| Cell::new()).collect();
        let words = (0..w).map(|_| Word::new()).collect();
        assert_eq!(
            List::new(cells, words).err(),
            Some(Refused::TooFewWords),
            "{n} cells"
        );
    }
    assert_eq!(List::<u32>::words_for(64), 1);
    assert_eq!(List::<u32>::words_for(65), 2);
}

#[test]
fn holds_its_capacity_and_refuses_more() {
    // Across a word boundary, and with a partial last word.
    for n in [1, 4, 64, 65, 130] {
        let l = list::<usize>(n);
        assert_eq!(l.capacity(), n);
        assert!(!l.has_any());
        assert_eq!(l.take(), None);
        for i in 0..n {
            assert_eq!(l.held(), i);
            assert_eq!(l.give(i), Ok(()), "{n} cells");
        }
        assert_eq!(l.held(), n);
        assert_eq!(l.give(999), Err(999), "{n} cells");
        assert!(l.has_any());
        let mut got: Vec<usize> = std::iter::from_fn(|| l.take()).collect();
        got.sort_unstable();
        assert_eq!(got, (0..n).collect::<Vec<_>>(), "{n} cells");
        assert!(!l.has_any());
    }
}

#[test]
fn cells_are_reused_many_times() {
    let l = list::<usize>(70);
    for round in 0..1000 {
        for i in 0..67 {
            assert_eq!(l.give(round * 100 + i), Ok(()));
        }
        let mut got: Vec<usize> = std::iter::from_fn(|| l.take()).collect();
        got.sort_unstable();
        assert_eq!(got, (0..67).map(|i| round * 100 + i).collect::<Vec<_>>());
    }
}

/// Counts drops, to see that the list drops what it holds, once.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Relaxed);
    }
}

#[test]
fn drops_what_it_holds_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    {
        let l = list::<Counted>(8);
        for _ in 0..6 {
            assert!(l.give(Counted(drops.clone())).is_ok());
        }
        drop(l.take());
        assert_eq!(drops.load(Relaxed), 1);
    }
    assert_eq!(drops.load(Relaxed), 6);
}

/// A fixed set of values (as a connection's buffers) cycles between the
/// list and several threads that take one, check it is theirs alone, and
/// give it back: at the end every value is in the list exactly once.
#[test]
fn threads_share_a_fixed_set_without_loss_or_duplication() {
    const VALUES: usize = 16;
    const THREADS: usize = 4;
    const ROUNDS: usize = 50_000;
    let l = Arc::new(list::<Box<[usize; 4]>>(VALUES + List::<()>::SPARE));
    let owner: Arc<Vec<AtomicUsize>> = Arc::new((0..VALUES).map(|_| AtomicUsize::new(0)).collect());
    for v in 0..VALUES {
        assert!(l.give(Box::new([v; 4])).is_ok());
    }
    let workers: Vec<_> = (1..=THREADS)
        .map(|me| {
            let (l, owner) = (l.clone(), owner.clone());
            std::thread::spawn(move || {
                let mut got = 0;
                for _ in 0..ROUNDS {
                    let Some(mut b) = l.take() else {
                        std::thread::yield_now();
                        continue;
                    };
                    got += 1;
                    let v = b[0];
                    // Not torn, and nobody else holds it.
                    assert!(b.iter().all(|&x| x == v), "torn value {b:?}");
                    assert_eq!(owner[v].swap(me, Relaxed), 0, "value {v} held twice");
                    b[1] = v;
                    assert_eq!(owner[v].swap(0, Relaxed), me);
                    // With SPARE cells more than values and fewer takers
                    // than that, a give is never refused.
                    assert!(l.give(b).is_ok(), "give refused");
                }
                got
            })
        })
        .collect();
    let taken: usize = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    assert!(taken > 0);
    let mut seen = [false; VALUES];
    while let Some(b) = l.take() {
        assert!(!seen[b[0]], "value {} twice", b[0]);
        seen[b[0]] = true;
    }
    assert!(seen.iter().all(|&s| s), "a value was lost");
}
