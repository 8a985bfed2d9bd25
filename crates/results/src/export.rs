//! Runs' samples as CSV: `run_id,metric,labels,unit,index,value`, one row per sample.

use crate::StoredRun;

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV of runs' samples; labels as `k=v;k=v`.
pub fn samples_csv(runs: &[StoredRun]) -> String {
    let mut out = String::from("run_id,metric,labels,unit,index,value\n");
    for run in runs {
        for m in &run.metrics {
            let labels: Vec<String> = m.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            for (i, v) in m.samples.iter().enumerate() {
                out.push_str(&format!(
                    "{},{},{},{},{},{}\n",
                    run.id,
                    quote(&m.name),
                    quote(&labels.join(";")),
                    quote(&m.unit),
                    i,
                    v
                ));
            }
        }
    }
    out
}
