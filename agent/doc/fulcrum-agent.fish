complete -c fulcrum-agent -s f -l use-file -d 'The agent\'s file: `host_agent { vtep ADDRESS }` and `virtual_network NAME { vni N interface IF }` blocks' -r -F
complete -c fulcrum-agent -l cluster -d 'The cluster store\'s members (etcd client URLs)' -r
complete -c fulcrum-agent -l metrics -d 'Serve Prometheus metrics at http://ADDRESS:PORT/metrics (its DIPs and their health, its translations, its sync lag; bound before it starts: a taken port exits 3)' -r
complete -c fulcrum-agent -s t -l config-test -d 'Check FILE and exit, as `pulse -t` does'
complete -c fulcrum-agent -s h -l help -d 'Print help'
complete -c fulcrum-agent -s V -l version -d 'Print version'
