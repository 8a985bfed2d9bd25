//! Runs recorded before metrics had labels (schema 1) named each metric with a sentence
//! (`latency 1.0 GiB`, `node 0 to node 1: triad avx2 GB/s`). Migrating to schema 2 turns those
//! names into the names and labels today's benchmarks record, so a run from before the migration
//! compares with one from after it. A name no rule knows is kept as it was, without labels.

use std::collections::BTreeMap;

type Labels = BTreeMap<String, String>;

/// `(name, labels)` for a schema-1 metric name.
pub fn relabel(old: &str) -> (String, Labels) {
    let mut labels = Labels::new();
    let mut rest = old;
    // Step prefixes: a matrix cell, a thread count or a worker count, or an SLB policy.
    if let Some((prefix, tail)) = old.split_once(": ") {
        if let Some((from, to)) = node_pair(prefix) {
            labels.insert("cpu_node".into(), from.into());
            labels.insert("mem_node".into(), to.into());
        } else if let Some(n) = prefix.strip_suffix(" threads").filter(|n| is_number(n)) {
            labels.insert("threads".into(), n.into());
        } else if let Some(n) = prefix.strip_suffix(" workers").filter(|n| is_number(n)) {
            labels.insert("workers".into(), n.into());
        } else {
            labels.insert("policy".into(), prefix.into());
        }
        rest = tail;
    }
    let words: Vec<&str> = rest.split(' ').collect();
    let name = match words.as_slice() {
        ["latency", "node", from, "to", "node", to] => {
            labels.insert("cpu_node".into(), (*from).into());
            labels.insert("mem_node".into(), (*to).into());
            "mem_latency"
        }
        ["latency", value, unit] => {
            labels.insert("size".into(), format!("{value} {unit}"));
            "mem_latency"
        }
        ["loaded", "latency", level @ ..] => {
            labels.insert("delay".into(), delay(level));
            "mem_loaded_latency"
        }
        ["load", "bandwidth", level @ ..] => {
            labels.insert("delay".into(), delay(level));
            "mem_load_bandwidth"
        }
        ["slb", "worker", worker, "ns/op"] => {
            labels.insert("worker".into(), (*worker).into());
            "slb_ns_per_op"
        }
        [kernel, isa, "GB/s"] => {
            labels.insert("kernel".into(), (*kernel).into());
            labels.insert("isa".into(), (*isa).into());
            "mem_bandwidth"
        }
        [kernel, "cpu", cpu] => {
            labels.insert("kernel".into(), (*kernel).into());
            labels.insert("cpu".into(), (*cpu).into());
            "mem_bandwidth_thread"
        }
        _ => {
            if let Some((file, node)) =
                rest.strip_prefix("read ").and_then(|r| r.rsplit_once(" from node "))
            {
                labels.insert("file".into(), file.into());
                labels.insert("node".into(), node.into());
                "pagecache_read_bandwidth"
            } else if let Some(timer) = rest.strip_suffix(" per call") {
                labels.insert("timer".into(), timer.into());
                "timer_cost"
            } else {
                return (old.to_string(), Labels::new());
            }
        }
    };
    (name.to_string(), labels)
}

fn node_pair(text: &str) -> Option<(&str, &str)> {
    let (from, to) = text.strip_prefix("node ")?.split_once(" to node ")?;
    (is_number(from) && is_number(to)).then_some((from, to))
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

fn delay(level: &[&str]) -> String {
    match level {
        ["delay", cycles] => (*cycles).to_string(),
        _ => level.join(" "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(old: &str) -> String {
        let (name, labels) = relabel(old);
        measure::metric::metric_key(&name, &labels)
    }

    #[test]
    fn every_schema_1_name_maps_to_todays_labels() {
        assert_eq!(key("latency 1.0 GiB"), "mem_latency{size=1.0 GiB}");
        assert_eq!(key("latency node 0 to node 1"), "mem_latency{cpu_node=0,mem_node=1}");
        assert_eq!(key("triad avx2 GB/s"), "mem_bandwidth{isa=avx2,kernel=triad}");
        assert_eq!(key("read cpu 3"), "mem_bandwidth_thread{cpu=3,kernel=read}");
        assert_eq!(
            key("node 1 to node 0: read avx2 GB/s"),
            "mem_bandwidth{cpu_node=1,isa=avx2,kernel=read,mem_node=0}"
        );
        assert_eq!(
            key("2 threads: copy sse2 GB/s"),
            "mem_bandwidth{isa=sse2,kernel=copy,threads=2}"
        );
        assert_eq!(key("loaded latency idle"), "mem_loaded_latency{delay=idle}");
        assert_eq!(key("load bandwidth delay 200"), "mem_load_bandwidth{delay=200}");
        assert_eq!(key("slb worker 1 ns/op"), "slb_ns_per_op{worker=1}");
        assert_eq!(key("4 workers: slb worker 3 ns/op"), "slb_ns_per_op{worker=3,workers=4}");
        assert_eq!(
            key("interleave: slb worker 0 ns/op"),
            "slb_ns_per_op{policy=interleave,worker=0}"
        );
        assert_eq!(
            key("read /data/a b from node 0"),
            "pagecache_read_bandwidth{file=/data/a b,node=0}"
        );
        assert_eq!(key("rdtsc per call"), "timer_cost{timer=rdtsc}");
        assert_eq!(key("something else"), "something else");
    }
}
