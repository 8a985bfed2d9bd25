//! A run as the rows both stores insert: built from a new run (summaries computed here) or from
//! a stored one (a push copies it as it is, UUID, host and time included).

use crate::{
    legacy, without_samples, NewRun, RunSummary, StoredMetric, StoredRun, WorkerPlacement,
};

/// One `metrics` row.
#[derive(Debug, Clone)]
pub(crate) struct MetricRow {
    pub name: String,
    pub unit: String,
    pub labels: String,
    pub quantiles: [f64; 5], // median, p25, p75, min, max
    pub samples: String,
}

/// One `runs` row with its metrics and placements.
#[derive(Debug, Clone)]
pub(crate) struct RunRow {
    pub head: RunHead,
    pub metrics: Vec<MetricRow>,
    /// (worker, requested, verified)
    pub placements: Vec<(String, String, String)>,
}

/// Now, as stored: RFC 3339 UTC with milliseconds (`2026-11-23T22:40:00.123Z`).
pub(crate) fn recorded_now() -> String {
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let seconds = measure::time::utc_rfc3339(now.as_secs());
    format!("{}.{:03}Z", seconds.trim_end_matches('Z'), now.subsec_millis())
}

/// `placements` rows: worker, requested (JSON), verified (JSON).
fn placement_rows(placements: &[WorkerPlacement]) -> Vec<(String, String, String)> {
    placements
        .iter()
        .map(|p| (p.worker.clone(), p.requested.to_string(), p.verified.to_string()))
        .collect()
}

impl RunRow {
    /// A run being recorded now on this host.
    pub fn new(run: &NewRun) -> Result<Self, serde_json::Error> {
        let mut metrics = Vec::with_capacity(run.metrics.len());
        for m in &run.metrics {
            let mut sorted: Vec<f64> =
                m.samples.iter().copied().filter(|v| v.is_finite()).collect();
            sorted.sort_by(f64::total_cmp);
            let q = |p| measure::summary::quantile(&sorted, p);
            metrics.push(MetricRow {
                name: m.name.clone(),
                unit: m.unit.symbol().to_string(),
                labels: serde_json::to_string(&m.labels)?,
                quantiles: [
                    q(0.5),
                    q(0.25),
                    q(0.75),
                    sorted.first().copied().unwrap_or(f64::NAN),
                    sorted.last().copied().unwrap_or(f64::NAN),
                ],
                samples: serde_json::to_string(&m.samples)?,
            });
        }
        Ok(Self {
            head: RunHead {
                uuid: crate::new_uuid(),
                host: crate::host_name(),
                recorded_at: recorded_now(),
                command: run.command.clone(),
                parameters: {
                    // Whoever records a run (not only the Recorder) stores no password.
                    let mut parameters = run.parameters.clone();
                    crate::secrets::scrub_parameters(&mut parameters);
                    parameters.to_string()
                },
                version: run.version.clone(),
                environment: run.environment.to_string(),
                topology: run.topology.to_string(),
                result: without_samples(run.result.clone()).to_string(),
                interrupted: run.interrupted,
            },
            metrics,
            placements: placement_rows(&run.placements),
        })
    }

    /// A stored run, copied as it is.
    pub fn copy_of(run: &StoredRun) -> Result<Self, serde_json::Error> {
        let mut metrics = Vec::with_capacity(run.metrics.len());
        for m in &run.metrics {
            metrics.push(MetricRow {
                name: m.name.clone(),
                unit: m.unit.clone(),
                labels: serde_json::to_string(&m.labels)?,
                quantiles: [m.median, m.p25, m.p75, m.min, m.max],
                samples: serde_json::to_string(&m.samples)?,
            });
        }
        Ok(Self {
            head: RunHead {
                uuid: run.uuid.clone(),
                host: run.host.clone(),
                recorded_at: run.recorded_at.clone(),
                command: run.command.clone(),
                parameters: {
                    // Runs recorded before argv was redacted leave no secret on a push.
                    let mut parameters = run.parameters.clone();
                    crate::secrets::scrub_parameters(&mut parameters);
                    parameters.to_string()
                },
                version: run.version.clone(),
                environment: run.environment.to_string(),
                topology: run.topology.to_string(),
                result: run.result.to_string(),
                interrupted: run.interrupted,
            },
            metrics,
            placements: placement_rows(&run.placements),
        })
    }
}

/// A `LIST` row as either driver reads it.
#[derive(Debug)]
pub(crate) struct ListedRow {
    pub id: i64,
    pub uuid: String,
    pub host: String,
    pub recorded_at: String,
    pub command: String,
    pub version: String,
    pub interrupted: bool,
    /// The first metric: name, median, unit, labels (JSON).
    pub metric: Option<(String, f64, String, Option<String>)>,
}

impl ListedRow {
    /// `relabel`: the file is from before labels (schema 1): names are turned into today's.
    pub fn summary(self, relabel: bool) -> RunSummary {
        let headline = self.metric.map(|(name, median, unit, labels)| {
            let (name, labels) = if relabel {
                legacy::relabel(&name)
            } else {
                let labels = labels.and_then(|l| serde_json::from_str(&l).ok());
                (name, labels.unwrap_or_default())
            };
            (measure::metric::metric_key(&name, &labels), median, unit)
        });
        RunSummary {
            id: self.id,
            uuid: self.uuid,
            host: self.host,
            recorded_at: self.recorded_at,
            command: self.command,
            version: self.version,
            interrupted: self.interrupted,
            headline,
        }
    }
}

/// A `runs` row (without its id), as written and as either driver reads it back.
#[derive(Debug, Clone)]
pub(crate) struct RunHead {
    pub uuid: String,
    pub host: String,
    pub recorded_at: String,
    pub command: String,
    pub parameters: String,
    pub version: String,
    pub environment: String,
    pub topology: String,
    pub result: String,
    pub interrupted: bool,
}

impl RunHead {
    pub fn into_run(
        self,
        id: i64,
        metrics: Vec<StoredMetric>,
        placements: Vec<(String, String, String)>,
    ) -> Result<StoredRun, serde_json::Error> {
        let placements = placements
            .into_iter()
            .map(|(worker, requested, verified)| {
                Ok(WorkerPlacement {
                    worker,
                    requested: serde_json::from_str(&requested)?,
                    verified: serde_json::from_str(&verified)?,
                })
            })
            .collect::<Result<Vec<_>, serde_json::Error>>()?;
        Ok(StoredRun {
            id,
            uuid: self.uuid,
            host: self.host,
            recorded_at: self.recorded_at,
            command: self.command,
            parameters: serde_json::from_str(&self.parameters)?,
            version: self.version,
            environment: serde_json::from_str(&self.environment)?,
            topology: serde_json::from_str(&self.topology)?,
            metrics,
            placements,
            result: serde_json::from_str(&self.result)?,
            interrupted: self.interrupted,
        })
    }
}

/// A `METRICS` row as either driver reads it: name, unit, [median, p25, p75, min, max],
/// samples (JSON), labels (JSON).
pub(crate) fn metric(
    name: String,
    unit: String,
    [median, p25, p75, min, max]: [f64; 5],
    samples: &str,
    labels: &str,
    relabel: bool,
) -> Result<StoredMetric, serde_json::Error> {
    let (name, labels) =
        if relabel { legacy::relabel(&name) } else { (name, serde_json::from_str(labels)?) };
    Ok(StoredMetric {
        name,
        unit,
        labels,
        // JSON has no NaN or infinity: serde_json writes them as null, read back as NaN.
        samples: serde_json::from_str::<Vec<Option<f64>>>(samples)?
            .into_iter()
            .map(|v| v.unwrap_or(f64::NAN))
            .collect(),
        median,
        p25,
        p75,
        min,
        max,
    })
}
