use super::*;
use ipvs::{Destination, Forwarding, Protocol, Service};

fn web() -> ServiceKey {
    ServiceKey::Address {
        protocol: Protocol::Tcp,
        address: "192.0.2.1".parse().unwrap(),
        port: 80,
    }
}

fn load(text: &str) -> config::Config {
    fulcrum_config::load_str("test.conf", text, &Default::default()).config
}

fn refusal(errno: i32) -> ipvs::Error {
    ipvs::Error::Kernel {
        operation: "test".into(),
        errno: ipvs::Errno(errno),
        reason: "test".into(),
    }
}

#[test]
fn refusals_that_say_the_table_is_not_as_known_are_told_apart() {
    let real_server = || Destination::new("10.0.2.11:80".parse().unwrap(), Forwarding::Masquerade);
    let address = real_server().socket_address();
    let cases = [
        (
            Operation::CreateService(Service::new(web(), "rr")),
            libc::EEXIST,
            true,
        ),
        (
            Operation::CreateService(Service::new(web(), "nonesuch")),
            libc::ENOENT,
            false,
        ),
        (
            Operation::CreateDestination(web(), real_server()),
            libc::EEXIST,
            true,
        ),
        // Its service is gone.
        (
            Operation::CreateDestination(web(), real_server()),
            libc::ESRCH,
            true,
        ),
        (
            Operation::CreateDestination(web(), real_server()),
            libc::EINVAL,
            false,
        ),
        (
            Operation::UpdateService(Service::new(web(), "rr")),
            libc::ESRCH,
            true,
        ),
        (Operation::DeleteService(web()), libc::ESRCH, true),
        (
            Operation::UpdateDestination(web(), real_server()),
            libc::ENOENT,
            true,
        ),
        (
            Operation::DeleteDestination(web(), address),
            libc::ENOENT,
            true,
        ),
        (
            Operation::DeleteDestination(web(), address),
            libc::EPERM,
            false,
        ),
        (Operation::Flush, libc::ESRCH, false),
    ];
    for (operation, errno, expected) in cases {
        assert_eq!(
            refused_for_its_state(&operation, &refusal(errno)),
            expected,
            "{operation} refused with errno {errno}"
        );
    }
}

#[test]
fn what_the_kernel_acknowledged_is_what_it_holds() {
    let mut table = Table::default();
    let first = Destination::new("10.0.0.1:80".parse().unwrap(), Forwarding::Masquerade);
    let second = Destination::new("10.0.0.2:80".parse().unwrap(), Forwarding::Masquerade);
    for operation in [
        Operation::CreateService(Service::new(web(), "rr")),
        Operation::CreateDestination(web(), first.clone()),
        Operation::CreateDestination(web(), second.clone()),
        Operation::UpdateDestination(
            web(),
            Destination {
                weight: 7,
                ..first.clone()
            },
        ),
        Operation::DeleteDestination(web(), second.socket_address()),
        Operation::UpdateService(Service::new(web(), "wlc")),
        Operation::SetTimeouts(ipvs::Timeouts {
            tcp: 900,
            tcp_fin: 0,
            udp: 0,
        }),
    ] {
        acknowledge(&mut table, &operation);
    }
    let entry = table.service(&web()).unwrap();
    assert_eq!(entry.service.scheduler, "wlc");
    assert_eq!(
        entry
            .destinations
            .iter()
            .map(|destination| (destination.socket_address(), destination.weight))
            .collect::<Vec<_>>(),
        [(first.socket_address(), 7)]
    );
    assert_eq!(table.timeouts.tcp, 900);
    acknowledge(&mut table, &Operation::DeleteService(web()));
    assert!(table.services.is_empty());
}

#[test]
fn modules_missing_from_the_kernel_are_loaded_before_their_services() {
    let service = |scheduler: &str, engine: Option<&str>| {
        let mut service = ipvs::Service::new(web(), scheduler);
        service.persistence_engine = engine.map(str::to_owned);
        service
    };
    let operations = [
        Operation::CreateService(service("lblcr", None)),
        Operation::CreateService(service("rr", Some("sip"))),
        Operation::UpdateService(service("lblcr", None)),
        Operation::UpdateService(service("wlc", None)),
        // Not a module name: left to the kernel to refuse.
        Operation::CreateService(service("../x", None)),
        Operation::DeleteService(web()),
    ];
    let loaded = |module: &str| matches!(module, "ip_vs_rr" | "ip_vs_wlc");
    assert_eq!(
        modules_to_load(&operations, loaded),
        ["ip_vs_lblcr", "ip_vs_pe_sip"]
    );
    assert!(modules_to_load(&operations[3..], loaded).is_empty());
}

#[test]
fn omega_runs_the_down_scripts_at_stop() {
    let configuration = load(
        "virtual_server 192.0.2.1 80 {
    protocol TCP
    omega
    quorum_down /bin/quorum-down
    real_server 10.0.0.1 80 { notify_down /bin/down-1 }
    real_server 10.0.0.2 80 { notify_down /bin/down-2\n TCP_CHECK { alpha } }
}
virtual_server 192.0.2.2 80 {
    protocol TCP
    quorum_down /bin/not-run
    real_server 10.0.0.1 80 { notify_down /bin/not-run }
}",
    );
    let scripts = |flush| -> Vec<String> {
        stop_notifications(&configuration, &Health::default(), flush)
            .into_iter()
            .map(|notification| match notification {
                Notification::RealServer { script, .. } | Notification::Quorum { script, .. } => {
                    script.unwrap().command
                }
            })
            .collect()
    };
    // The alpha server is not alive yet: no notify_down for it.
    assert_eq!(scripts(false), ["/bin/down-1", "/bin/quorum-down"]);
    assert_eq!(scripts(true), ["/bin/quorum-down"]);
}

#[test]
fn a_reading_is_what_was_known_whatever_the_counters_and_the_order() {
    let destination = |address: &str, weight: u32| Destination {
        weight,
        ..Destination::new(address.parse().unwrap(), Forwarding::Masquerade)
    };
    let known = TableService {
        service: Service::new(web(), "rr"),
        destinations: vec![destination("10.0.0.1:80", 1), destination("10.0.0.2:80", 2)],
    };
    let mut read = TableService {
        service: Service {
            flags: ipvs::ServiceFlags::HASHED,
            ..Service::new(web(), "rr")
        },
        destinations: vec![
            Destination {
                counters: Some(ipvs::ConnectionCounters {
                    active: 3,
                    inactive: 1,
                    persistent: 0,
                }),
                ..destination("10.0.0.2:80", 2)
            },
            destination("10.0.0.1:80", 1),
        ],
    };
    assert!(same_in_the_kernel(&known, &read));
    read.destinations[1].weight = 0;
    assert!(!same_in_the_kernel(&known, &read));
    read.destinations.pop();
    assert!(!same_in_the_kernel(&known, &read));
    let mut other_scheduler = known.clone();
    other_scheduler.service.scheduler = "wlc".into();
    assert!(!same_in_the_kernel(&known, &other_scheduler));
}

fn pass(operations: usize, error: Option<ReconcileError>) -> Report {
    Report {
        operations,
        traffic: Traffic::default(),
        took: Duration::ZERO,
        notifications: Vec::new(),
        error,
    }
}

fn refused_at(index: usize) -> (usize, ipvs::Error) {
    (index, ipvs::Error::Unavailable)
}

#[test]
fn a_pass_says_what_the_kernel_applied_refused_and_lost() {
    assert_eq!(pass(10, None).kernel_outcome(), (10, 0, false));
    // Two of five refused.
    let refused = BatchError {
        failures: vec![refused_at(1), refused_at(3)],
        interrupted: None,
        total: 5,
    };
    assert_eq!(
        pass(5, Some(ReconcileError::Apply(refused))).kernel_outcome(),
        (3, 2, false)
    );
    // Lost at the fourth of six: three known, one of them refused, the
    // rest unknown.
    let lost = BatchError {
        failures: vec![refused_at(0), refused_at(4)],
        interrupted: Some((3, ipvs::Error::Unavailable)),
        total: 6,
    };
    assert_eq!(
        pass(6, Some(ReconcileError::Apply(lost))).kernel_outcome(),
        (2, 1, true)
    );
    assert_eq!(
        pass(0, Some(ReconcileError::Read(ipvs::Error::Unavailable))).kernel_outcome(),
        (0, 0, true)
    );
}

/// Every notification, script or not, makes its notify FIFO line, with
/// the protocol keepalived holds for the virtual server (a mark's
/// `protocol`, which IPVS ignores, included).
#[test]
fn notifications_make_keepalived_s_fifo_lines() {
    let configuration = load(
        "virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 10.0.0.1 8080 {
    }
}
virtual_server fwmark 7 {
    protocol TCP
    real_server 10.0.0.2 80 {
    }
}
",
    );
    let by_address = VirtualServerKey::from_config(&configuration.virtual_servers[0]);
    let by_mark = VirtualServerKey::from_config(&configuration.virtual_servers[1]);
    let lines: Vec<String> = [
        Notification::RealServer {
            virtual_server: by_address.clone(),
            real_server: "10.0.0.1:8080".parse().unwrap(),
            up: true,
            script: None,
        },
        Notification::Quorum {
            virtual_server: by_address,
            up: false,
            script: None,
        },
        Notification::RealServer {
            virtual_server: by_mark.clone(),
            real_server: "10.0.0.2:80".parse().unwrap(),
            up: false,
            script: None,
        },
        Notification::Quorum {
            virtual_server: by_mark,
            up: true,
            script: None,
        },
    ]
    .iter()
    .map(|notification| fifo_line(&configuration, notification))
    .collect();
    assert_eq!(
        lines,
        [
            "RS [10.0.0.1]:tcp:8080 [192.0.2.1]:tcp:80 UP\n",
            "VS [192.0.2.1]:tcp:80 DOWN\n",
            "RS [10.0.0.2]:tcp:80 FWM 7 DOWN\n",
            "VS FWM 7 UP\n",
        ]
    );
}
