#!/usr/bin/env bash
# Serve an existing bare git repository to local clients over two real
# transports, for benchmarks that run many `git fetch` / `git push` against it:
#
#   * smart HTTP: `git http-backend` (CGI) behind lighttpd, pushes allowed;
#   * ssh: a private sshd with its own host key and a generated client key.
#
# Both listen on 127.0.0.1 only, on ports the kernel picks, and run as the
# current user. Everything they need (configs, keys, logs, pid files) lives in
# the scratch directory given with --dir; nothing under /etc is touched and no
# system service is started.
#
# Usage:
#   serve-remote.sh install
#       apt-get the Debian packages below (apt-get update only when something
#       is missing); quiet when all are installed.
#   serve-remote.sh start --repo REPO.git --dir SCRATCH [--latency-ms N]
#       start the servers in the background and print, on stdout, lines for
#       `eval`:
#         LOOPX_HTTP_URL=http://127.0.0.1:PORT/REPO.git
#         LOOPX_SSH_URL=ssh://USER@127.0.0.1:PORT/abs/path/REPO.git
#         LOOPX_GIT_SSH_COMMAND='ssh -i KEY -p PORT -o ...'
#         LOOPX_LATENCY=none|proxy
#       Progress and diagnostics go to stderr.
#   serve-remote.sh stop --dir SCRATCH
#       stop everything that `start` recorded in SCRATCH.
#
# Latency (--latency-ms N, one-way: every byte is held N ms in each direction,
# so a request/response round trip gains about 2N ms): a small Python
# (stdlib) delay line per transport on 127.0.0.1 delivers each chunk N ms
# after it was read; the URLs then name the proxy. (`tc qdisc netem` in a
# network namespace would be the kernel's way, but the machines this runs on
# lack the sch_netem module: "Specified qdisc kind is unknown".)
#
# Pitfalls this script handles (see the comments at each place):
#   http-backend needs GIT_PROJECT_ROOT and GIT_HTTP_EXPORT_ALL in the CGI
#   environment and http.receivepack=true for anonymous pushes; lighttpd must
#   buffer request bodies or pushes over 1 MiB fail with HTTP 411; sshd needs
#   the directory /run/sshd, an absolute AuthorizedKeysFile, a PATH in which
#   git-upload-pack / git-receive-pack are found, and (for speed) to keep bash
#   from sourcing the user's ~/.bashrc on every connection.
set -euo pipefail

# sshd and lighttpd live in sbin directories that a non-login PATH may
# lack.
PATH="$PATH:/usr/sbin:/sbin"

PACKAGES=(lighttpd openssh-server openssh-client)

log() { printf 'serve-remote: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# Quote a string for a POSIX shell: as it is when that is safe, else in single
# quotes.
shquote() {
  if [[ $1 =~ ^[A-Za-z0-9_./:@%+=,-]+$ ]]; then printf '%s' "$1"; return; fi
  printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# A TCP port on 127.0.0.1 that is free now (the kernel picks it). Another
# process could take it before our server binds it; start checks that every
# server really listens.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Wait until HOST:PORT accepts TCP connections (bash's /dev/tcp), or fail.
wait_for_port() {
  local host=$1 port=$2 what=$3 i
  for i in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  die "$what is not listening on $host:$port (see the logs in $SCRATCH/logs)"
}

# Start a command in the background, detached from our stdout/stderr (so that
# `eval "$(serve-remote.sh start ...)"` does not wait for it), and record its
# pid in $SCRATCH/pids/NAME.pid. setsid makes it lead a process group of its
# own (for stop) and, as a background job is never a group leader already,
# execs the command in place: $! is the server's own pid.
spawn() {
  local name=$1; shift
  setsid "$@" </dev/null >>"$SCRATCH/logs/$name.log" 2>&1 &
  echo $! >"$SCRATCH/pids/$name.pid"
}

# ---------------------------------------------------------------- install ---

cmd_install() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "installing ${missing[*]}"
  # Debian packages start their services on install unless policy-rc.d says
  # no (container images usually ship one that does). Without it, installing
  # lighttpd and openssh-server would start system daemons on ports 80 and
  # 22; add a temporary "no" for the install and remove it after.
  local policy=/usr/sbin/policy-rc.d added_policy=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
    added_policy=1
  fi
  # apt and dpkg chatter goes to a log, shown only if something fails.
  local rc=0 aptlog
  aptlog=$(mktemp)
  { apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}"; } >"$aptlog" 2>&1 || rc=$?
  if [ -n "$added_policy" ]; then rm -f "$policy"; fi
  if [ "$rc" -ne 0 ]; then
    tail -n 30 "$aptlog" >&2
    rm -f "$aptlog"
    die "apt-get failed ($rc)"
  fi
  rm -f "$aptlog"
}

# ------------------------------------------------------------------ start ---

# lighttpd + git http-backend. Serves $SCRATCH/http/repos, which holds one
# symlink to the repository, so only that repository is exported.
start_http() {
  local addr=$1 port=$2
  local backend
  backend="$(git --exec-path)/git-http-backend"
  [ -x "$backend" ] || die "git-http-backend not found at $backend"
  mkdir -p "$SCRATCH/http/repos" "$SCRATCH/http/docroot" "$SCRATCH/http/upload"
  ln -sfn "$REPO" "$SCRATCH/http/repos/$REPO_NAME"
  cat >"$SCRATCH/http/lighttpd.conf" <<EOF
# Generated by serve-remote.sh: smart HTTP for $REPO
server.modules        = ( "mod_alias", "mod_cgi", "mod_setenv", "mod_accesslog" )
server.bind           = "$addr"
server.port           = $port
server.document-root  = "$SCRATCH/http/docroot"
server.errorlog       = "$SCRATCH/logs/lighttpd-error.log"
accesslog.filename    = "$SCRATCH/logs/lighttpd-access.log"
# Request bodies (pushed packs) are buffered here, not in /var/tmp.
server.upload-dirs    = ( "$SCRATCH/http/upload" )
# Buffer each request body before starting the CGI (the default, spelled out):
# git sends packs over 1 MiB (http.postBuffer) with chunked transfer encoding,
# and a streamed chunked body has no CONTENT_LENGTH for the CGI, so lighttpd
# would answer "411 Length Required". Responses may stream.
server.stream-request-body  = 0
server.stream-response-body = 1
# Every URL goes to git-http-backend; the part after the script name (e.g.
# /$REPO_NAME/info/refs) becomes PATH_INFO, resolved under GIT_PROJECT_ROOT.
alias.url             = ( "/" => "$backend/" )
cgi.assign            = ( "" => "" )
# http-backend serves only repositories with git-daemon-export-ok unless
# GIT_HTTP_EXPORT_ALL is set, and refuses anonymous pushes unless
# http.receivepack is true (given here through GIT_CONFIG_*, so the repository's
# own config is not changed). safe.directory: the repository may belong to
# another user. lighttpd gives a CGI no environment of its own, so PATH and
# HOME are set too (HOME: a scratch one, so no user config is read).
setenv.add-environment = (
  "GIT_PROJECT_ROOT"    => "$SCRATCH/http/repos",
  "GIT_HTTP_EXPORT_ALL" => "1",
  "GIT_CONFIG_COUNT"    => "2",
  "GIT_CONFIG_KEY_0"    => "http.receivepack",
  "GIT_CONFIG_VALUE_0"  => "true",
  "GIT_CONFIG_KEY_1"    => "safe.directory",
  "GIT_CONFIG_VALUE_1"  => "*",
  "PATH"                => "$GIT_DIR_PATH:/usr/bin:/bin",
  "HOME"                => "$SCRATCH/http"
)
EOF
  lighttpd -tt -f "$SCRATCH/http/lighttpd.conf" >&2 || die "lighttpd rejected its config"
  # -D: stay in the foreground (we background it ourselves and keep its pid).
  spawn lighttpd "$LIGHTTPD" -D -f "$SCRATCH/http/lighttpd.conf"
}

# A private sshd: own host key, own config, key-only login with a client key
# generated here.
start_ssh() {
  local addr=$1 port=$2
  local d="$SCRATCH/ssh"
  mkdir -p "$d"
  [ -f "$d/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C serve-remote-host -f "$d/host_ed25519"
  [ -f "$d/client_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C serve-remote-client -f "$d/client_ed25519"
  cp "$d/client_ed25519.pub" "$d/authorized_keys"
  # sshd refuses to start without its privilege-separation directory, whose
  # path is compiled in; Debian creates it only from its service scripts.
  mkdir -p /run/sshd
  cat >"$d/sshd_config" <<EOF
# Generated by serve-remote.sh: ssh access to $REPO
ListenAddress $addr
Port $port
HostKey $d/host_ed25519
PidFile none
# Only the generated client key may log in, as $(id -un) (root included).
AuthorizedKeysFile $d/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers $(id -un)
# The scratch directory may be group/world writable (e.g. under /tmp).
StrictModes no
UsePAM no
# Keep each connection lean: no rc file, motd, lastlog or DNS look-up.
PermitUserRC no
PrintMotd no
PrintLastLog no
UseDNS no
AllowTcpForwarding no
X11Forwarding no
MaxStartups 100:30:200
LogLevel ERROR
# The remote command runs as "\$SHELL -c 'git-upload-pack ...'" with sshd's
# compiled-in PATH, which may not contain the git that serves HTTP: put its
# directory first. SHLVL=1: bash sources ~/.bashrc for commands run by sshd
# only when it is the first shell level (Debian builds bash that way); a
# user's .bashrc can be slow or print text that corrupts the git protocol.
SetEnv PATH=$GIT_DIR_PATH:/usr/local/bin:/usr/bin:/bin SHLVL=1
EOF
  "$SSHD" -t -f "$d/sshd_config" || die "sshd rejected its config"
  # -D: do not daemonize; -e: log to stderr (our log file).
  spawn sshd "$SSHD" -D -e -f "$d/sshd_config"
}

# The Python delay line. Written to the scratch directory so that `start`
# needs nothing beside this script.
write_proxy() {
  cat >"$SCRATCH/latency-proxy.py" <<'EOF'
"""TCP delay line for serve-remote.sh (Python 3 standard library only).

usage: latency-proxy.py DELAY_MS TARGET_HOST TARGET_PORT PORT_FILE

Listens on 127.0.0.1 on a port the kernel picks (written to PORT_FILE once it
listens) and forwards each connection to TARGET. Every chunk read from either
side is delivered to the other DELAY_MS after it was read: a pure delay, like
a long wire, not a bandwidth limit (chunks in flight overlap).
"""
import asyncio
import os
import sys


async def relay(src, dst, delay, peers):
    """Copy src to dst, holding each chunk `delay` seconds; EOF is delayed too."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def deliver():
        while True:
            due, data = await queue.get()
            await asyncio.sleep(max(0.0, due - loop.time()))
            if not data:
                if dst.can_write_eof():
                    dst.write_eof()
                return
            dst.write(data)
            await dst.drain()

    sender = asyncio.create_task(deliver())
    try:
        while True:
            data = await src.read(65536)
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
        await sender
    except (OSError, asyncio.IncompleteReadError):
        # One side failed: drop the whole connection, both directions.
        sender.cancel()
        for w in peers:
            w.close()


async def main():
    delay_ms, host, port, port_file = sys.argv[1:5]
    delay = int(delay_ms) / 1000.0

    async def handle(client_r, client_w):
        try:
            server_r, server_w = await asyncio.open_connection(host, int(port))
        except OSError:
            client_w.close()
            return
        peers = (client_w, server_w)
        try:
            await asyncio.gather(
                relay(client_r, server_w, delay, peers),
                relay(server_r, client_w, delay, peers),
            )
        finally:
            for w in peers:
                w.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.sockets[0].getsockname()[1])
    os.replace(tmp, port_file)
    async with server:
        await server.serve_forever()


asyncio.run(main())
EOF
}

# Start a delay line in front of HOST:PORT; prints the proxy's port.
start_proxy() {
  local name=$1 host=$2 port=$3 ms=$4 i
  local port_file="$SCRATCH/$name.port"
  rm -f "$port_file"
  spawn "$name" python3 "$SCRATCH/latency-proxy.py" "$ms" "$host" "$port" "$port_file"
  for i in $(seq 1 100); do
    if [ -s "$port_file" ]; then cat "$port_file"; return 0; fi
    sleep 0.05
  done
  die "$name did not start (see $SCRATCH/logs/$name.log)"
}

cmd_start() {
  local latency_ms=""
  REPO="" SCRATCH=""
  while [ "$#" -gt 0 ]; do
    case $1 in
      --repo) REPO=${2:?--repo needs a path}; shift 2 ;;
      --dir) SCRATCH=${2:?--dir needs a path}; shift 2 ;;
      --latency-ms) latency_ms=${2:?--latency-ms needs a number}; shift 2 ;;
      *) usage ;;
    esac
  done
  [ -n "$REPO" ] && [ -n "$SCRATCH" ] || usage
  if [ -n "$latency_ms" ]; then
    [[ $latency_ms =~ ^[0-9]+$ ]] || die "--latency-ms takes whole milliseconds"
  fi

  [ -d "$REPO" ] || die "no repository at $REPO"
  REPO=$(cd "$REPO" && pwd -P)
  [ "$(git --git-dir="$REPO" rev-parse --is-bare-repository 2>/dev/null)" = true ] \
    || die "$REPO is not a bare git repository"
  REPO_NAME=$(basename "$REPO")
  mkdir -p "$SCRATCH"
  SCRATCH=$(cd "$SCRATCH" && pwd -P)
  if compgen -G "$SCRATCH/pids/*.pid" >/dev/null; then
    die "$SCRATCH already has running servers: run stop --dir first"
  fi
  mkdir -p "$SCRATCH/pids" "$SCRATCH/logs"

  LIGHTTPD=$(command -v lighttpd) || die "lighttpd not installed (run: $0 install)"
  SSHD=$(command -v sshd) || die "sshd not installed (run: $0 install)"
  local git_bin
  git_bin=$(command -v git)
  GIT_DIR_PATH=$(dirname "$git_bin")

  # If anything below fails (set -e or die), stop what was started.
  trap 'rc=$?; if [ "$rc" -ne 0 ]; then log "start failed; stopping what started"; cmd_stop --dir "$SCRATCH" >/dev/null 2>&1 || true; fi' EXIT

  local latency=none addr=127.0.0.1 http_port ssh_port
  if [ -n "$latency_ms" ]; then latency=proxy; fi
  http_port=$(free_port)
  ssh_port=$(free_port)
  while [ "$ssh_port" = "$http_port" ]; do ssh_port=$(free_port); done

  start_http "$addr" "$http_port"
  start_ssh "$addr" "$ssh_port"
  wait_for_port "$addr" "$http_port" lighttpd
  wait_for_port "$addr" "$ssh_port" sshd

  if [ "$latency" = proxy ]; then
    write_proxy
    http_port=$(start_proxy http-proxy "$addr" "$http_port" "$latency_ms")
    ssh_port=$(start_proxy ssh-proxy "$addr" "$ssh_port" "$latency_ms")
  fi
  trap - EXIT

  local user ssh_cmd
  user=$(id -un)
  # LogLevel=ERROR hides ssh's "Permanently added ... to known hosts" line,
  # printed on every connection since the known-hosts file is /dev/null.
  ssh_cmd="ssh -i $(shquote "$SCRATCH/ssh/client_ed25519") -p $ssh_port"
  ssh_cmd+=" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
  ssh_cmd+=" -o BatchMode=yes -o IdentitiesOnly=yes -o LogLevel=ERROR"
  {
    echo "LOOPX_HTTP_URL=$(shquote "http://$addr:$http_port/$REPO_NAME")"
    echo "LOOPX_SSH_URL=$(shquote "ssh://$user@$addr:$ssh_port$REPO")"
    echo "LOOPX_GIT_SSH_COMMAND=$(shquote "$ssh_cmd")"
    echo "LOOPX_LATENCY=$latency"
  } | tee "$SCRATCH/env"
  log "serving $REPO (latency: $latency${latency_ms:+, $latency_ms ms}); stop with: $0 stop --dir $SCRATCH"
}

# ------------------------------------------------------------------- stop ---

cmd_stop() {
  local SCRATCH=""
  while [ "$#" -gt 0 ]; do
    case $1 in
      --dir) SCRATCH=${2:?--dir needs a path}; shift 2 ;;
      *) usage ;;
    esac
  done
  [ -n "$SCRATCH" ] || usage
  [ -d "$SCRATCH" ] || die "no directory $SCRATCH"
  SCRATCH=$(cd "$SCRATCH" && pwd -P)
  local f pid cmdline pids=() i
  for f in "$SCRATCH"/pids/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    rm -f "$f"
    # A stale pid file (server died, machine restarted) may name a pid now
    # reused: only signal a process whose command line names SCRATCH.
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || cmdline=
    [[ $cmdline == *"$SCRATCH/"* ]] || continue
    # Each server leads its own session (setsid): signal the whole group, so
    # sshd's per-connection children and lighttpd's CGIs go too.
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid")
  done
  for pid in "${pids[@]}"; do
    for i in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  log "stopped ${#pids[@]} process(es)"
}

case ${1:-} in
  install) shift; [ "$#" -eq 0 ] || usage; cmd_install ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  *) usage ;;
esac
