//! A record's attachments torn down with real plugin processes (shell scripts): the order,
//! what a failure stops, the result cache entries removed, and a plugin file without an
//! execute bit refused before anything of its attachment runs.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use braid_cni::record::{self, Entry};
use braid_cni::wire::CniEnv;
use braid_delegate::delegates::Delegates;
use braid_delegate::teardown::Teardown;
use serde_json::json;

const PLUGIN: &str = r#"#!/bin/sh
if [ "$CNI_COMMAND" = VERSION ]; then
  echo '{"cniVersion": "1.0.0", "supportedVersions": ["0.4.0", "1.0.0"]}'
  exit 0
fi
cat > /dev/null
echo "${0##*/} $CNI_COMMAND $CNI_IFNAME" >> "$(dirname "$0")/../calls.log"
"#;

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("braid-teardown-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("bin")).expect("bin");
    fs::create_dir_all(dir.join("results")).expect("results");
    for (name, mode) in [("first", 0o755), ("second", 0o755), ("noexec", 0o644)] {
        let path = dir.join("bin").join(name);
        fs::write(&path, PLUGIN).expect("plugin");
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("mode");
    }
    dir
}

fn attachment(network: &str, ifname: &str, types: &[&str]) -> serde_json::Value {
    let plugins: Vec<_> = types.iter().map(|t| json!({"type": t})).collect();
    let list = json!({"cniVersion": "1.0.0", "name": network, "plugins": plugins});
    json!({
        "name": network, "networkName": network, "ifname": ifname,
        "config": list.to_string(), "state": "added",
        "result": {"cniVersion": "1.0.0", "ips": [{"address": "10.1.0.5/24"}]},
    })
}

fn entries() -> Vec<Entry> {
    let doc = json!({
        "kind": "braidAttachmentRecord", "version": 2, "containerId": "ctr1",
        "netns": "/run/netns/pod1", "cniVersion": "1.0.0",
        "attachments": [
            attachment("neta", "eth0", &["first", "second"]),
            attachment("netb", "net1", &["first", "noexec"]),
        ],
    });
    record::decode(doc.to_string().as_bytes(), "ctr1")
        .expect("record")
        .attachments
}

fn calls(dir: &Path) -> Vec<String> {
    fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn attachments_run_in_reverse_and_a_plugin_without_execute_bit_stops_its_own() {
    let dir = scratch();
    for cached in ["neta-ctr1-eth0", "netb-ctr1-net1"] {
        fs::write(dir.join("results").join(cached), b"{}").expect("cache entry");
    }
    let env = CniEnv {
        command: "DEL".into(),
        container_id: "ctr1".into(),
        netns: "/run/netns/pod1".into(),
        ..CniEnv::default()
    };
    let mut teardown = Teardown {
        env: &env,
        cache_dir: &dir,
        delegates: Delegates::new(
            [dir.join("bin").display().to_string()],
            Duration::from_secs(10),
        ),
    };
    let entries = entries();
    let order: Vec<&Entry> = entries.iter().rev().collect();
    let outcomes = teardown.attachments(&order);

    let refused = outcomes[0].as_ref().expect_err("netb refused");
    assert_eq!(refused.code, 103, "{refused}");
    assert!(refused.details.contains("is not executable"), "{refused}");
    assert!(outcomes[1].is_ok(), "{:?}", outcomes[1]);
    // Nothing of netb ran; neta's plugins ran last first.
    assert_eq!(calls(&dir), ["second DEL eth0", "first DEL eth0"]);
    assert!(!dir.join("results").join("neta-ctr1-eth0").exists());
    assert!(dir.join("results").join("netb-ctr1-net1").exists());
    fs::remove_dir_all(&dir).expect("cleanup");
}
