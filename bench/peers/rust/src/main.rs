//! The rust lane: scylla-rust-driver 1.9 with its defaults (SessionBuilder with the three
//! contact points), one query pinned to each host every 25 ms with the driver's
//! SingleTargetLoadBalancingPolicy, one JSON line per host state change on stdout.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::unprepared::Statement;

fn emit(fields: &str) {
    let ts = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis();
    println!("{{\"ts\":{ts},{fields}}}");
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

async fn poll(session: &Session, host: String, port: u16) {
    let addr = SocketAddr::new(host.parse().unwrap(), port);
    let mut stmt = Statement::new("SELECT release_version FROM system.local");
    stmt.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(
        NodeIdentifier::NodeAddress(addr),
        None,
    )));
    let mut tick = tokio::time::interval(Duration::from_millis(25));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut known, mut ok, mut last_err, mut errors) = (false, false, String::new(), 0u64);
    loop {
        tick.tick().await;
        let res = session.query_unpaged(stmt.clone(), &[]).await;
        let msg = match &res {
            Ok(_) => String::new(),
            Err(e) => {
                errors += 1;
                e.to_string()
            }
        };
        if !known || ok != res.is_ok() || msg != last_err {
            (known, ok, last_err) = (true, res.is_ok(), msg);
            emit(&format!(
                "\"host\":{},\"ok\":{ok},\"errors\":{errors},\"err\":{}",
                json_string(&host),
                json_string(&last_err)
            ));
        }
    }
}

#[tokio::main]
async fn main() {
    let hosts: Vec<String> = std::env::var("PEERS_HOSTS").unwrap().split(',').map(String::from).collect();
    let port = 9042;
    let session = match SessionBuilder::new().known_nodes(hosts.iter().map(|h| format!("{h}:{port}"))).build().await {
        Ok(s) => s,
        Err(e) => {
            emit(&format!("\"event\":\"fatal\",\"err\":{}", json_string(&e.to_string())));
            std::process::exit(1);
        }
    };
    emit("\"event\":\"connected\"");
    let session = std::sync::Arc::new(session);
    let tasks: Vec<_> = hosts
        .into_iter()
        .map(|h| {
            let s = session.clone();
            tokio::spawn(async move { poll(&s, h, port).await })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
}
