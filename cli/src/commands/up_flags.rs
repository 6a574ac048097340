//! The flags of `minik up` that take a value to check: each parser validates what users type
//! (quantities, durations, CIDR sizes, a storage URL) and keeps the text as written, since it is
//! passed on unchanged to the component that reads it.
//!
//! Kubernetes counterpart: the flag validation of `kube-apiserver`, `kubelet` and
//! `kube-controller-manager` (`--node-cidr-mask-size`, resource quantities), done here once, at
//! `minik up`, so that a typo fails before any process starts.

/// `node-2=cpu=4,memory=8Gi,pods=50` → `("node-2", ["--cpu", "4", "--memory", "8Gi", …])`.
pub(super) fn parse_node_size(text: &str) -> Result<(String, Vec<String>), String> {
    let (node, sizes) = text
        .split_once('=')
        .filter(|(node, _)| node.starts_with("node-"))
        .ok_or_else(|| format!("{text:?}: expected NODE=cpu=Q,memory=Q,pods=N (node-2=cpu=4)"))?;
    let mut flags = Vec::new();
    for size in sizes.split(',') {
        let (key, value) = size.split_once('=').unwrap_or((size, ""));
        let flag = match key.trim() {
            "cpu" => parse_cpu(value).map(|_| "--cpu")?,
            "memory" => parse_memory(value).map(|_| "--memory")?,
            "pods" => match value.parse::<u16>() {
                Ok(n) if n > 0 => "--max-pods",
                _ => return Err(format!("{value:?} is not a number of pods")),
            },
            other => return Err(format!("{other:?}: expected cpu, memory or pods")),
        };
        flags.extend([flag.to_string(), value.to_string()]);
    }
    Ok((node.to_string(), flags))
}

/// A cpu quantity the scheduler can read (`2`, `1500m`), passed on as written.
pub(super) fn parse_cpu(text: &str) -> Result<String, String> {
    match minik_scheduler::quantity::cpu_millis(text) {
        Some(m) if m > 0 => Ok(text.to_string()),
        _ => Err(format!("{text:?} is not a cpu quantity (2, 1500m)")),
    }
}

/// A memory quantity the scheduler can read (`4Gi`, `512Mi`), passed on as written.
pub(super) fn parse_memory(text: &str) -> Result<String, String> {
    match minik_scheduler::quantity::bytes(text) {
        Some(b) if b > 0 => Ok(text.to_string()),
        _ => Err(format!("{text:?} is not a memory quantity (4Gi, 512Mi)")),
    }
}

/// Validates a humantime duration and keeps its text, which is passed on unchanged.
pub(super) fn parse_duration(text: &str) -> Result<String, String> {
    humantime::parse_duration(text)
        .map(|_| text.to_string())
        .map_err(|e| e.to_string())
}

/// A node CIDR's prefix length, `23` or `/23`, from 16 to 28.
pub(super) fn parse_mask_size(text: &str) -> Result<u8, String> {
    let prefixes = minik_kubelet::cidr::NODE_PREFIXES;
    text.trim_start_matches('/')
        .parse()
        .ok()
        .filter(|len| prefixes.contains(len))
        .ok_or_else(|| {
            let (low, high) = (prefixes.start(), prefixes.end());
            format!("{text:?}: expected a prefix length from {low} to {high}, like 23 or /23")
        })
}

/// Validates a `--storage` value and keeps its text, which is passed to the apiserver unchanged.
pub(super) fn parse_storage(text: &str) -> Result<String, String> {
    text.parse::<minik_apiserver::StorageSpec>()
        .map(|spec| spec.to_string())
        .map_err(|e| e.to_string())
}
