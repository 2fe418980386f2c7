# Sourced by hw/emu/perftest.sh and hw/emu/side-by-side.sh: TCP ports for server / client
# pairs. The caller sets `next` (the first port to try) and `limit` (seconds to wait).

# Sets `port` to the next TCP port from `next` on that nothing on this machine uses (in any
# state).
free_port() {
    while ss -Htan "( sport = :$next or dport = :$next )" | grep -q .; do
        next=$((next + 1))
    done
    port=$next
    next=$((next + 1))
}

# Wait until something listens on TCP port $1 (without connecting: the perftest server takes
# the first connection as its client), while process $2 lives.
wait_listen() {
    local n=0
    until ss -Hltn "( sport = :$1 )" | grep -q .; do
        kill -0 "$2" 2>/dev/null || return 1
        n=$((n + 1))
        [ $n -gt $((limit * 20)) ] && return 1
        sleep 0.05
    done
}
