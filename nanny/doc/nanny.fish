# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_nanny_global_optspecs
    string join \n f/use-file= once json tcp-check= h/help V/version
end

function __fish_nanny_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_nanny_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_nanny_using_subcommand
    set -l cmd (__fish_nanny_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c nanny -n "__fish_nanny_needs_command" -s f -l use-file -d 'The configuration (keepalived\'s -f)' -r -F
complete -c nanny -n "__fish_nanny_needs_command" -l tcp-check -d 'How TCP_CHECK asks a server. half-open: up when the server\'s kernel answers the SYN with SYN-ACK (what keepalived\'s connect succeeding tells), refused on its reset, timeout on silence; this machine\'s kernel then resets the half-open request, so the server\'s application never accepts a connection (keepalived\'s check makes one, which the server accepts and may log). Needs CAP_NET_RAW; without it nanny connects, and says so once on stderr. HTTP_GET, SSL_GET and SMTP_CHECK always connect' -r -f -a "connect\t'keepalived\'s: a full connection (handshake, then a FIN), which the server\'s application accepts'
half-open\t'A bare SYN from a raw socket: up on the server\'s SYN-ACK, refused on its reset; the server\'s application never sees a connection (needs CAP_NET_RAW; without it, the connect)'"
complete -c nanny -n "__fish_nanny_needs_command" -l once -d 'One round of checks, then exit: non-zero if any real server is down. Without it, nanny runs until SIGINT or SIGTERM, and SIGHUP reloads the configuration'
complete -c nanny -n "__fish_nanny_needs_command" -l json -d 'One JSON object per line instead of text'
complete -c nanny -n "__fish_nanny_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nanny -n "__fish_nanny_needs_command" -s V -l version -d 'Print version'
complete -c nanny -n "__fish_nanny_needs_command" -f -a "digest" -d 'Print the MD5 digest of a URL\'s body, as keepalived\'s genhash does'
complete -c nanny -n "__fish_nanny_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c nanny -n "__fish_nanny_using_subcommand digest" -l timeout -d 'Seconds before giving up' -r
complete -c nanny -n "__fish_nanny_using_subcommand digest" -s h -l help -d 'Print help'
complete -c nanny -n "__fish_nanny_using_subcommand help; and not __fish_seen_subcommand_from digest help" -f -a "digest" -d 'Print the MD5 digest of a URL\'s body, as keepalived\'s genhash does'
complete -c nanny -n "__fish_nanny_using_subcommand help; and not __fish_seen_subcommand_from digest help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
