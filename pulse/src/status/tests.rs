use super::*;

fn at(seconds: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs_f64(seconds)
}

fn status() -> DirectorStatus {
    DirectorStatus {
        version: "0.1.0".to_owned(),
        pid: 4242,
        configuration: "/etc/keepalived/keepalived.conf".to_owned(),
        loaded_at: 1000.0,
        last_reload_successful: false,
        reloads_succeeded: 2,
        reloads_failed: 1,
        vrrp_instances: vec![InstanceStatus {
            name: "VI_1".to_owned(),
            interface: "eth0".to_owned(),
            virtual_router_id: 51,
            state: "MASTER".to_owned(),
            priority: 90,
            base_priority: 100,
            since: 4000.0,
            virtual_addresses: vec!["192.168.1.10/24 dev eth0 scope global".to_owned()],
        }],
        virtual_servers: vec![VirtualServerStatus {
            virtual_server: "10.0.0.1:80 TCP".to_owned(),
            real_servers: vec![
                RealServerStatus {
                    real_server: "10.0.2.11:8080".to_owned(),
                    up: true,
                    reason: "TCP_CHECK 10.0.2.11:8080: success".to_owned(),
                    since: 3000.0,
                },
                RealServerStatus {
                    real_server: "10.0.2.12:8080".to_owned(),
                    up: false,
                    reason: "TCP_CHECK 10.0.2.12:8080: connection refused".to_owned(),
                    since: 4090.0,
                },
            ],
        }],
    }
}

#[test]
fn the_text_shows_states_health_reasons_and_ages() {
    assert_eq!(
        text(&status(), at(4100.0)),
        "pulse 0.1.0, process 4242, /etc/keepalived/keepalived.conf (loaded 51m40s ago; \
         reloads: 2 taken, 1 refused, the last one refused)\n\
         \n\
         VRRP\n\
         \x20 VI_1  eth0  vrid 51  MASTER for 1m40s  priority 90 (configured 100)\n\
         \x20     192.168.1.10/24 dev eth0 scope global\n\
         \n\
         virtual servers\n\
         \x20 10.0.0.1:80 TCP  1 of 2 real servers up\n\
         \x20     10.0.2.11:8080  up   for 18m20s  TCP_CHECK 10.0.2.11:8080: success\n\
         \x20     10.0.2.12:8080  DOWN for 10s  TCP_CHECK 10.0.2.12:8080: connection refused\n"
    );
}

#[test]
fn the_document_reads_back_as_written() {
    let document = serde_json::to_string(&status()).unwrap();
    assert_eq!(
        serde_json::from_str::<DirectorStatus>(&document).unwrap(),
        status()
    );
}

#[test]
fn the_socket_sits_beside_the_pid_file() {
    assert_eq!(
        socket_path(Path::new("/run/pulse.pid")),
        Path::new("/run/pulse.sock")
    );
    assert_eq!(
        socket_path(Path::new("/tmp/x/director")),
        Path::new("/tmp/x/director.sock")
    );
}

#[test]
fn ages_are_in_their_largest_units() {
    let now = at(1_000_000.0);
    for (ago, text) in [
        (0.0, "0s"),
        (59.0, "59s"),
        (61.0, "1m01s"),
        (7260.0, "2h01m"),
        (90000.0, "1d01h"),
    ] {
        assert_eq!(age(1_000_000.0 - ago, now), text);
    }
}
