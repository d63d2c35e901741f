//! A plan and what running it did, as the lines `cellar keys --plan` prints.

use crate::encoding::to_string_binary;

use super::execute::Execution;
use super::plan::{Plan, PlanKind};

/// A plan and its execution as the lines the command prints.
pub fn describe(plan: &Plan, exec: Option<&Execution>, hashed: bool) -> Vec<String> {
    let mut out = vec![format!("read: {}", plan.query.name)];
    let shape = match plan.kind {
        PlanKind::PointGet => "point read".to_string(),
        PlanKind::RangeScan => "one range scan".to_string(),
        PlanKind::FanOut => format!("fan-out of {} scans", plan.ranges.len()),
        PlanKind::FullScan => "FULL SCAN".to_string(),
        PlanKind::Empty => "nothing to read".to_string(),
    };
    let limit = plan.ranges.first().and_then(|r| r.limit);
    out.push(format!(
        "  plan: {shape}{}: {}",
        limit.map(|n| format!(", limit {n}")).unwrap_or_default(),
        plan.note
    ));
    if !plan.fixed.is_empty() || plan.range_on.is_some() {
        out.push(format!(
            "  fixes: {}{}",
            if plan.fixed.is_empty() {
                "nothing".into()
            } else {
                plan.fixed.join(" ")
            },
            plan.range_on
                .as_ref()
                .map(|p| format!("; range on {p}"))
                .unwrap_or_default()
        ));
    }
    if let Some((parts, n)) = &plan.fan_out {
        out.push(format!("  fan-out: {n} scans over {parts}"));
    }
    if hashed {
        out.push(match &plan.partitions {
            Some(p) if p.len() == 1 => "  partition key: known (1 partition)".to_string(),
            Some(p) => format!("  partition key: enumerated ({} partitions)", p.len()),
            None => "  partition key: not known".to_string(),
        });
    }
    for r in plan.ranges.iter().take(3) {
        out.push(format!(
            "  scan [{}, {}){}",
            to_string_binary(&r.from),
            r.to.as_deref().map_or("end".into(), to_string_binary),
            r.limit.map(|n| format!(" limit {n}")).unwrap_or_default()
        ));
    }
    if plan.ranges.len() > 3 {
        out.push(format!("  ... and {} more scans", plan.ranges.len() - 3));
    }
    if let Some(layout) = &plan.serving_layout {
        out.push(format!("  a layout that serves it as one range scan: {layout}"));
    }
    if let Some(e) = exec {
        out.push(format!(
            "  ran on cellar: {} {}{} on {} server{} touched, {} rows read, {} returned; brute force: {} {}",
            e.regions,
            if hashed { "partition" } else { "region" },
            if e.regions == 1 { "" } else { "s" },
            e.servers,
            if e.servers == 1 { "" } else { "s" },
            e.rows_read,
            e.rows_returned,
            e.expected.len(),
            if e.agrees() { "(agrees)" } else { "(DISAGREES)" }
        ));
    }
    out
}
