complete -c pulse -s f -l use-file -d 'Use the specified configuration file (default \'/etc/keepalived/keepalived.conf\')' -r
complete -c pulse -s u -l umask -d 'The file creation mask (C\'s notation: 022, 0x12), before the configuration\'s umask; default 0177' -r
complete -c pulse -s p -l pid -d 'Use the specified pidfile (default /run/pulse.pid)' -r
complete -c pulse -s i -l config-id -d 'Skip any configuration lines beginning \'@\' that don\'t match ID, or any lines beginning @^ that do match. The config-id defaults to the node name up to its first dot' -r
complete -c pulse -l signum -d 'Print the number of the signal that asks for SIGFUNC (STOP, RELOAD, DATA, STATS, STATS_CLEAR, JSON), as keepalived does' -r
complete -c pulse -s t -l config-test -d 'Check the configuration and exit; the report goes to stderr, or to LOG_FILE' -r
complete -c pulse -l metrics -d 'Serve Prometheus metrics at http://ADDRESS:PORT/metrics (VRRP under the keepalived exporters\' names, real servers\' health, reloads; a Mux\'s sync lag, VIPs and tenants\' IPVS counters; docs/observability.md)' -r
complete -c pulse -l tcp-check -d 'How TCP_CHECK asks a real server: connect (the default, keepalived\'s full connection, which the server accepts) or half-open (a bare SYN: up on the server\'s SYN-ACK, down on its reset; the server\'s application never sees a connection; needs CAP_NET_RAW, else connect, logged once)' -r
complete -c pulse -l cluster -d 'The SDN mode\'s cluster store (etcd members), for --apply and --status (docs/sdn.md)' -r
complete -c pulse -l apply -d 'Check FILE, a policy (keepalived.conf syntax with virtual_network blocks), and write it to the cluster store in one transaction; with an error nothing is written (exit 4)' -r
complete -c pulse -l which-dip -d 'For a client\'s address and port, the DIP each Mux chooses for each VIP (mh: computed from the table each Mux\'s kernel holds), and whether they agree' -r
complete -c pulse -l vip -d 'The one VIP --which-dip asks of (tcp unless written)' -r
complete -c pulse -s P -l vrrp -d 'Only run VRRP (no checkers, no IPVS)'
complete -c pulse -s C -l check -d 'Only run the checkers and IPVS'
complete -c pulse -s l -l log-console -d 'Log messages to the console (stderr)'
complete -c pulse -s D -l log-detail -d 'Detailed log messages'
complete -c pulse -s G -l no-syslog -d 'Don\'t log via syslog'
complete -c pulse -s V -l dont-release-vrrp -d 'Don\'t remove VRRP VIPs and VROUTEs on daemon stop'
complete -c pulse -s I -l dont-release-ipvs -d 'Don\'t remove the IPVS services pulse programmed when it stops (the next pulse adopts them)'
complete -c pulse -s n -l dont-fork -d 'Don\'t fork the daemon process'
complete -c pulse -s e -l all-config -d 'Error if any configuration file is missing (as if every include were includea)'
complete -c pulse -s v -l version -d 'Display the version number'
complete -c pulse -s h -l help -d 'Display this help message'
complete -c pulse -l dump-config -d 'Print the resolved configuration (after includes, definitions, conditionals and defaults) as JSON'
complete -c pulse -l status -d 'Show what the pulse running here knows (its pid file\'s, -p): VRRP instances, real servers\' health and why; with --cluster, the cluster: VIPs, DIPs, hosts, health, and the policy revision each Mux and agent applied'
complete -c pulse -l json -d '--status or --which-dip as one JSON document'
