//! Two Muxes' `mh` tables on the real kernel: one that lived through a
//! VIP's history (a DIP down and back, one added in the middle of the
//! policy's list, one unregistered, one down at the end), one started on
//! the last state alone, both programmed by the Mux's plan
//! (`pulse::mux::maglev`), choose the same DIP for every flow. A third,
//! programmed through the same history by the LVS mode's plan (a down DIP
//! deleted, every creation at the head of the list wherever the policy
//! puts it), shows the test can tell.
//!
//! Each Mux is a namespace with the VIP on `lo` and a client namespace of
//! its own behind a veth, the client at the same address in each: the
//! same flows (UDP from 600 source ports) reach each Mux, and its IPVS
//! connection table says which DIP it chose (the DIPs are routed nowhere:
//! the choice is made, and the entry written, before the packet is sent).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use ipvs::{Client, Destination, Forwarding, Protocol, Service, ServiceFlags, ServiceKey};
use labkit::Namespace;
use labkit::ipvs_connections;
use pulse::lvs::desired::{Table, TableService};
use pulse::lvs::plan::{Ownership, plan, read};
use pulse::mux::maglev::lookup::{Entry, Lookup, Options};
use pulse::mux::maglev::{self, CreationWeights, MAGLEV};

const VIP: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 10);
const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 250, 0, 1);
const FLOWS: u16 = 600;

fn key() -> ServiceKey {
    ServiceKey::Address {
        protocol: Protocol::Udp,
        address: IpAddr::V4(VIP),
        port: 80,
    }
}

fn dip(index: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 9, 0, index)), 8080)
}

/// The VIP as the Mux's desired table has it for `dips` (the policy's
/// order: index, weight, up), as `mux::desired` makes it; with `drop_down`
/// (the LVS mode's way) a down DIP is left out instead.
fn desired(dips: &[(u8, u32, bool)], drop_down: bool) -> (Table, CreationWeights) {
    let mut weights = CreationWeights::new();
    let mut service = Service::new(key(), MAGLEV);
    service.flags |= ServiceFlags::SH_FALLBACK | ServiceFlags::SH_PORT;
    let destinations = dips
        .iter()
        .filter(|(_, _, up)| *up || !drop_down)
        .map(|&(index, weight, up)| {
            let mut destination = Destination::new(dip(index), Forwarding::Route);
            destination.weight = if up { weight } else { 0 };
            if !up {
                weights.insert((key(), dip(index)), weight);
            }
            destination
        })
        .collect();
    (
        Table::of(
            [TableService {
                service,
                destinations,
            }],
            Default::default(),
        ),
        weights,
    )
}

/// A Mux and its client.
struct Mux {
    name: String,
    mux: Namespace,
    client: Namespace,
    ipvs: Client,
}

impl Mux {
    fn create(name: &str) -> Mux {
        let mux = Namespace::create(&format!("{name}-mux")).unwrap();
        let client = Namespace::create(&format!("{name}-client")).unwrap();
        client
            .ip(&format!(
                "link add c0 type veth peer name m0 netns {}\n\
                 addr add {CLIENT}/24 dev c0\n\
                 link set c0 up\n\
                 route add {VIP}/32 via 10.250.0.2",
                mux.name()
            ))
            .unwrap();
        mux.ip(&format!(
            "addr add 10.250.0.2/24 dev m0\nlink set m0 up\naddr add {VIP}/32 dev lo"
        ))
        .unwrap();
        let ipvs = mux.run(Client::connect).unwrap().unwrap();
        Mux {
            name: name.to_owned(),
            mux,
            client,
            ipvs,
        }
    }

    /// Programs the VIP as `dips`: by the Mux's plan, or by the LVS
    /// mode's.
    fn apply(&mut self, dips: &[(u8, u32, bool)], mux_plan: bool) {
        let kernel = read(&mut self.ipvs).unwrap();
        let operations = if mux_plan {
            let (table, weights) = desired(dips, false);
            maglev::plan(&kernel, &table, &weights)
        } else {
            plan(&kernel, &desired(dips, true).0, &Ownership::Everything)
        };
        self.ipvs
            .apply(&operations)
            .unwrap_or_else(|error| panic!("{}: {error:?}", self.name));
    }

    /// The VIP's destinations in the kernel's list order, as the `mh`
    /// model reads them: a destination at weight 0 has the last weight the
    /// Mux's plan created it with (its policy weight in `dips`).
    fn entries(&mut self, dips: &[(u8, u32, bool)]) -> Vec<Entry> {
        self.ipvs
            .destinations(&key())
            .unwrap()
            .iter()
            .map(|destination| {
                let address = destination.socket_address();
                let policy = dips
                    .iter()
                    .find(|(index, _, _)| dip(*index) == address)
                    .map_or(0, |(_, weight, _)| *weight);
                Entry {
                    address,
                    weight: destination.weight,
                    last_weight: if destination.weight > 0 {
                        destination.weight
                    } else {
                        policy
                    },
                }
            })
            .collect()
    }

    /// How many of `choices` (the kernel's, by the client's port) the model of
    /// `mh` makes alike from `entries`; the first flows it does not, in
    /// words (port, the kernel's choice, the model's).
    fn modelled(entries: Vec<Entry>, choices: &BTreeMap<u16, SocketAddr>) -> (usize, Vec<String>) {
        let model = Lookup::new(entries);
        let options = Options {
            port: true,
            fallback: true,
        };
        let mut alike = 0;
        let mut unlike = Vec::new();
        for (port, destination) in choices {
            let chosen = model.choose(SocketAddr::from((CLIENT, *port)), options);
            if chosen == Some(*destination) {
                alike += 1;
            } else if unlike.len() < 10 {
                unlike.push(format!(
                    "port {port}: kernel {destination}, model {chosen:?}"
                ));
            }
        }
        (alike, unlike)
    }

    /// The DIP this Mux chose for each of the flows, by client port.
    fn choices(&self) -> BTreeMap<u16, SocketAddr> {
        self.client
            .run(|| {
                for port in 0..FLOWS {
                    let socket = UdpSocket::bind((CLIENT, 20_000 + port)).unwrap();
                    socket.send_to(b"flow", (VIP, 80)).unwrap();
                }
            })
            .unwrap();
        let started = Instant::now();
        loop {
            let choices: BTreeMap<u16, SocketAddr> = ipvs_connections(&self.mux)
                .unwrap()
                .into_iter()
                .filter(|connection| connection.protocol == "UDP")
                .map(|connection| (connection.client.port(), connection.destination))
                .collect();
            if choices.len() == usize::from(FLOWS) {
                return choices;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{}: {} of {FLOWS} flows in IPVS's connection table",
                self.name,
                choices.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
#[ignore = "runs in the lab"]
fn muxes_with_different_histories_choose_the_same_dip_for_every_flow() {
    labkit::require_lab();
    // The scheduler's module, loaded outside IPVS's lock (see the
    // reconciler's load_modules).
    let _ = std::process::Command::new("modprobe")
        .args(["-q", "ip_vs_mh"])
        .status();
    let history: &[&[(u8, u32, bool)]] = &[
        &[
            (1, 1, true),
            (2, 2, true),
            (3, 1, true),
            (4, 1, true),
            (5, 1, true),
        ],
        // 3 reported down.
        &[
            (1, 1, true),
            (2, 2, true),
            (3, 1, false),
            (4, 1, true),
            (5, 1, true),
        ],
        // 7 added in the middle of the policy's list; 5 unregistered.
        &[
            (1, 1, true),
            (2, 2, true),
            (7, 1, true),
            (3, 1, false),
            (4, 1, true),
        ],
        // 3 back; 4 down; 6 added at the end.
        &[
            (1, 1, true),
            (2, 2, true),
            (7, 1, true),
            (3, 1, true),
            (4, 1, false),
            (6, 1, true),
        ],
    ];
    let last = history[history.len() - 1];
    let mut lived = Mux::create("mh-lived");
    let mut started = Mux::create("mh-started");
    let mut naive = Mux::create("mh-naive");
    for dips in history {
        lived.apply(dips, true);
        naive.apply(dips, false);
    }
    started.apply(last, true);

    let lived_choices = lived.choices();
    let started_choices = started.choices();
    let naive_choices = naive.choices();
    let agree = |other: &BTreeMap<u16, SocketAddr>| {
        lived_choices
            .iter()
            .filter(|(port, destination)| other.get(port) == Some(destination))
            .count()
    };
    let mut shares: BTreeMap<SocketAddr, usize> = BTreeMap::new();
    for destination in lived_choices.values() {
        *shares.entry(*destination).or_default() += 1;
    }
    println!(
        "mh, the same flows to three Muxes: one that lived through the history and one started \
         on its end agree on {} of {FLOWS}; one programmed by the LVS mode's plan on {} \
         (flows per DIP: {shares:?})",
        agree(&started_choices),
        agree(&naive_choices),
    );
    assert_eq!(agree(&started_choices), usize::from(FLOWS));
    // The down DIP gets no new flow (fallback), its share goes elsewhere.
    assert!(
        !lived_choices
            .values()
            .any(|destination| *destination == dip(4))
    );
    assert!(!shares.contains_key(&dip(5)));
    // Every DIP up has some: the table is spread.
    for index in [1, 2, 3, 6, 7] {
        assert!(
            shares.contains_key(&dip(index)),
            "no flow for {}",
            dip(index)
        );
    }
    // The test can tell a table built otherwise.
    assert!(
        agree(&naive_choices) < usize::from(FLOWS),
        "the LVS mode's plan agreed on every flow: this test cannot tell"
    );

    // pulse's model of `mh` (what `--which-dip` computes with) makes the
    // kernel's choice for every flow: after the history (a drained DIP, a
    // weight of 2, a DIP inserted in the middle of the list), and with
    // weights 1, 2 and 100, which the kernel divides by their greatest
    // common divisor and shifts to fit 6 bits.
    let entries = lived.entries(last);
    let (modelled, unlike) = Mux::modelled(entries.clone(), &lived_choices);
    let mut weighted = Mux::create("mh-weights");
    let heavy: &[(u8, u32, bool)] = &[(1, 1, true), (2, 2, true), (3, 100, true)];
    weighted.apply(heavy, true);
    let heavy_choices = weighted.choices();
    let heavy_entries = weighted.entries(heavy);
    let (heavy_modelled, heavy_unlike) = Mux::modelled(heavy_entries.clone(), &heavy_choices);
    let mut heavy_shares: BTreeMap<SocketAddr, usize> = BTreeMap::new();
    for destination in heavy_choices.values() {
        *heavy_shares.entry(*destination).or_default() += 1;
    }
    println!(
        "the mh model against the kernel: {modelled} of {FLOWS} flows after the history, \
         {heavy_modelled} of {FLOWS} with weights 1, 2 and 100 (the kernel's flows per DIP: \
         {heavy_shares:?}; the model's rows per DIP {:?})",
        Lookup::new(heavy_entries.clone()).shares()
    );
    assert_eq!(modelled, usize::from(FLOWS), "{entries:?}\n{unlike:#?}");
    assert_eq!(
        heavy_modelled,
        usize::from(FLOWS),
        "{heavy_entries:?}\n{heavy_unlike:#?}"
    );
}
