# The container engines the e2e cells run in, each with private state that
# the suite starts and removes itself (../shared/notes/containers.md):
#
#   podman           rootful Podman with runc (the system's storage)
#   podman-crun      the same with crun, in a private mount namespace where the
#                    host's cgroup2 mount is hidden (crun 1.8 refuses this
#                    hybrid cgroup host otherwise; see README)
#   podman-rootless  Podman as the unprivileged user agent-init-e2e, with
#                    subordinate ids and its own storage
#   docker           a private dockerd: own data root, exec root, socket and
#                    cgroup parent, in its own mount namespace, no network
#   containerd       a private containerd (ctr), likewise
#
# Interface, after engine_load ENGINE: ENGINE_LABEL, ENGINE_RANK, E (the CLI
# as an array; not for containerd), IMAGE_A/B/C/D, engine_own DIR (make a node
# directory usable by the engine's container root), noexec_volume SRC DST
# (the arguments for a noexec bind of SRC), engine_setup and engine_teardown
# (the ctest fixture's set-up and clean-up).
# Expects: root (the repository), build (the dev build directory).

E2E_USER=agent-init-e2e
# The label of every image the tests build (their intermediate stages too).
E2E_LABEL=agent-init-e2e=1
HOME_DIR=/usr/share/elastic-agent
STATE=$HOME_DIR/state
state_dir=$root/build/e2e/engines
rootfs_dir=$root/build/e2e

# The hashes of the test images: A and B are two builds of a 7.x agent (an
# image upgrade), C an 8.6+ agent, D is A with the home's modes of the images
# up to 8.11 (root:root 0770, written through group 0).
IMAGE_SPECS=(9b2fec:7:8.12 8ecdff:7:8.12 c86c86:8:8.12 9b2fec-811:7:8.11)

# The root filesystems, made once for every engine (e2e.rootfs).
make_rootfs_tars() {
  local spec hash gen perms
  mkdir -p "$rootfs_dir"
  for spec in "${IMAGE_SPECS[@]}"; do
    IFS=: read -r hash gen perms <<<"$spec"
    "$root/docker/make-rootfs" "$rootfs_dir/rootfs-$hash" "$release" "$build/tests/agent-sim" /bin/busybox \
      "${hash%-*}" "$gen" "$perms"
    tar --numeric-owner -C "$rootfs_dir/rootfs-$hash" -cf "$rootfs_dir/rootfs-$hash.tar" .
  done
}

# Runs COMMAND HASH for the hash of every test image.
each_image() {
  local spec
  for spec in "${IMAGE_SPECS[@]}"; do "$@" "${spec%%:*}"; done
}

# The image configuration the Containerfile gives (docker/Containerfile).
IMPORT_CHANGES=(--change 'WORKDIR /usr/share/elastic-agent' --change 'ENV PATH=/usr/local/bin:/bin'
  --change 'ENTRYPOINT ["/usr/local/bin/agent-init"]'
  --change 'CMD ["--", "/usr/share/elastic-agent/elastic-agent", "run"]')

engine_load() {
  ENGINE=$1
  case $ENGINE in
    podman | podman-crun)
      E=(podman)
      [ "$ENGINE" = podman-crun ] && E=(podman --runtime crun)
      IMAGE_A=localhost/agent-init-test:9b2fec IMAGE_B=localhost/agent-init-test:8ecdff
      IMAGE_C=localhost/agent-init-test:c86c86 IMAGE_D=localhost/agent-init-test:9b2fec-811
      ;;
    podman-rootless)
      load_env rootless
      E=(rootless_podman)
      IMAGE_A=localhost/agent-init-test:9b2fec IMAGE_B=localhost/agent-init-test:8ecdff
      IMAGE_C=localhost/agent-init-test:c86c86 IMAGE_D=localhost/agent-init-test:9b2fec-811
      ;;
    docker)
      load_env docker
      E=(/usr/bin/docker -H "unix://${DOCKER_DIR:-/nonexistent}/docker.sock")
      IMAGE_A=agent-init-test:9b2fec IMAGE_B=agent-init-test:8ecdff
      IMAGE_C=agent-init-test:c86c86 IMAGE_D=agent-init-test:9b2fec-811
      ;;
    containerd)
      load_env containerd
      E=()
      IMAGE_A=localhost/agent-init-test:9b2fec IMAGE_B=localhost/agent-init-test:8ecdff
      IMAGE_C=localhost/agent-init-test:c86c86 IMAGE_D=localhost/agent-init-test:9b2fec-811
      ;;
    *)
      echo "unknown engine $ENGINE" >&2
      exit 64
      ;;
  esac
  ENGINE_RANK=$(engine_rank "$ENGINE")
  ENGINE_LABEL=$(engine_label "$ENGINE")
}

engine_rank() {
  case $1 in
    podman) echo 1 ;;
    podman-crun) echo 2 ;;
    podman-rootless) echo 3 ;;
    docker) echo 4 ;;
    containerd) echo 5 ;;
  esac
}

version_of() { "$@" 2>/dev/null | grep -oE '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -1; }

engine_label() {
  case $1 in
    podman) echo "Podman $(version_of podman --version), runc $(version_of runc --version)" ;;
    podman-crun) echo "Podman $(version_of podman --version), crun $(version_of crun --version)" ;;
    podman-rootless) echo "rootless Podman $(version_of podman --version), runc $(version_of runc --version)" ;;
    docker) echo "Docker Engine $(version_of /usr/sbin/dockerd --version)" ;;
    containerd) echo "containerd $(version_of containerd --version) (ctr run)" ;;
  esac
}

load_env() {
  local file=$state_dir/$1.env
  # shellcheck disable=SC1090
  [ -f "$file" ] && . "$file"
  return 0
}

# What the engine needs that this machine may lack: SKIPPED (77) with the reason.
engine_available() {
  case $ENGINE in
    podman) command -v podman >/dev/null && command -v runc >/dev/null ;;
    podman-crun) command -v podman >/dev/null && command -v crun >/dev/null ;;
    podman-rootless) command -v podman >/dev/null && command -v newuidmap >/dev/null ;;
    docker) [ -x /usr/sbin/dockerd ] && [ -x /usr/bin/docker ] ;;
    containerd) command -v containerd >/dev/null && command -v ctr >/dev/null ;;
  esac
}

engine_own() {
  if [ "$ENGINE" = podman-rootless ]; then
    chown "$E2E_USER:$E2E_USER" "$1"
    chmod 0711 "$work"
  fi
  return 0
}

# The arguments for a volume at DST that is SRC mounted noexec, as a
# hostPath on a noexec filesystem would be.
noexec_volume() {  # src dst
  case $ENGINE in
    docker)
      # Docker has no noexec volume option: a noexec bind of SRC where
      # dockerd sees it (its own mount namespace), which never reaches the host.
      nsenter -t "$DOCKER_PID" -m -- mount --bind "$1" "$1"
      nsenter -t "$DOCKER_PID" -m -- mount -o remount,bind,noexec "$1"
      echo "-v" "$1:$2"
      ;;
    *) echo "-v" "$1:$2:noexec" ;;
  esac
}

# The crun cells run in a mount namespace where the host's cgroup2 mount
# (which holds a controller on this hybrid host) is hidden: what crun sees on
# a pure cgroup v1 host. Called by the cell script before anything else.
enter_crun_namespace() {  # the cell's own command line
  if [ "$ENGINE" = podman-crun ] && [ -z "${AGENT_INIT_E2E_IN_NS:-}" ] &&
    grep -qs . /sys/fs/cgroup/unified/cgroup.controllers; then
    AGENT_INIT_E2E_IN_NS=1 exec unshare --mount --propagation private -- /bin/sh -c \
      'mount -t tmpfs -o mode=0755 agent-init-e2e-hide-cgroup2 /sys/fs/cgroup/unified && exec "$@"' sh "$@"
  fi
}

# ---- rootless Podman ----

rootless_podman() {
  runuser -u "$E2E_USER" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$ROOTLESS_DIR/home" \
    USER="$E2E_USER" XDG_RUNTIME_DIR="$ROOTLESS_DIR/run" XDG_CONFIG_HOME="$ROOTLESS_DIR/home/.config" \
    XDG_DATA_HOME="$ROOTLESS_DIR/home/.local/share" CONTAINERS_CONF="$ROOTLESS_DIR/containers.conf" \
    CONTAINERS_STORAGE_CONF="$ROOTLESS_DIR/storage.conf" /usr/bin/podman "$@"
}

rootless_setup() {
  if ! id "$E2E_USER" >/dev/null 2>&1; then
    useradd --create-home --shell /usr/sbin/nologin "$E2E_USER"
  fi
  # Subordinate ids for the user namespace (useradd adds them where
  # /etc/subuid exists; a range of its own otherwise).
  grep -q "^$E2E_USER:" /etc/subuid 2>/dev/null || usermod --add-subuids 600000-665535 "$E2E_USER"
  grep -q "^$E2E_USER:" /etc/subgid 2>/dev/null || usermod --add-subgids 600000-665535 "$E2E_USER"
  ROOTLESS_DIR=$(mktemp -d /tmp/ai-e2e-rootless.XXXXXX)
  mkdir -p "$ROOTLESS_DIR"/{home,run,tmp,net,root,runroot}
  # It replaces /etc/containers/containers.conf: the same limits and runtime
  # as scripts/setup writes there, and nothing outside this directory.
  cat >"$ROOTLESS_DIR/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$ROOTLESS_DIR/events.log"
tmp_dir = "$ROOTLESS_DIR/tmp"
lock_type = "file"
[network]
network_config_dir = "$ROOTLESS_DIR/net"
CONF
  cat >"$ROOTLESS_DIR/storage.conf" <<CONF
[storage]
driver = "overlay"
rootless_storage_path = "$ROOTLESS_DIR/root"
runroot = "$ROOTLESS_DIR/runroot"
CONF
  chown -R "$E2E_USER:$E2E_USER" "$ROOTLESS_DIR"
  chmod 0700 "$ROOTLESS_DIR/run"
  echo "ROOTLESS_DIR=$ROOTLESS_DIR" >"$state_dir/rootless.env"
  each_image rootless_import
}

rootless_import() {  # hash
  install -o "$E2E_USER" -m 0644 "$rootfs_dir/rootfs-$1.tar" "$ROOTLESS_DIR/rootfs-$1.tar"
  rootless_podman import -q "${IMPORT_CHANGES[@]}" "$ROOTLESS_DIR/rootfs-$1.tar" "localhost/agent-init-test:$1" >/dev/null
  rm -f "$ROOTLESS_DIR/rootfs-$1.tar"
}

rootless_teardown() {
  load_env rootless
  [ -n "${ROOTLESS_DIR:-}" ] || return 0
  rootless_podman rm -af -t 0 >/dev/null 2>&1 || true
  rootless_podman pod rm -af -t 0 >/dev/null 2>&1 || true
  # The user namespace's pause process keeps it alive; the user runs nothing else.
  pkill -KILL -u "$E2E_USER" 2>/dev/null || true
  rm -rf "$ROOTLESS_DIR" "$state_dir/rootless.env"
}

# ---- Docker Engine ----

docker_setup() {
  DOCKER_DIR=$(mktemp -d /tmp/ai-e2e-docker.XXXXXX)  # short: unix socket paths are limited
  local cgroup=ai-e2e-docker-${DOCKER_DIR##*.}
  mkdir -p "$DOCKER_DIR"/{data,exec}
  echo '{}' >"$DOCKER_DIR/daemon.json"  # not /etc/docker/daemon.json
  # Its own mount namespace: its mounts never reach the host's table and go
  # with it. tmpfs over /run hides a system containerd's socket (dockerd
  # would use it) and takes the paths dockerd and containerd hard-code there;
  # tmpfs over /etc/docker takes its key.json.
  "$build/tests/daemon-ctl" start "$DOCKER_DIR/dockerd.pid" "$DOCKER_DIR/dockerd.log" 60 -- \
    unshare --mount --propagation private -- /bin/sh -c \
    'mount -t tmpfs -o mode=0755 ai-e2e-run /run && mount -t tmpfs -o mode=0700 ai-e2e-etc /etc/docker &&
     exec "$@"' sh \
    /usr/sbin/dockerd --config-file "$DOCKER_DIR/daemon.json" --data-root "$DOCKER_DIR/data" \
    --exec-root "$DOCKER_DIR/exec" --pidfile "$DOCKER_DIR/exec/dockerd.pid" --host "unix://$DOCKER_DIR/docker.sock" \
    --iptables=false --ip6tables=false --ip-masq=false --bridge=none --storage-driver overlay2 \
    --cgroup-parent "/$cgroup" --shutdown-timeout 5 || return 1
  DOCKER_PID=$(cat "$DOCKER_DIR/dockerd.pid")
  printf 'DOCKER_DIR=%s\nDOCKER_PID=%s\nDOCKER_CGROUP=%s\n' "$DOCKER_DIR" "$DOCKER_PID" "$cgroup" \
    >"$state_dir/docker.env"
  each_image docker_import
}

docker_import() {  # hash
  /usr/bin/docker -H "unix://$DOCKER_DIR/docker.sock" import "${IMPORT_CHANGES[@]}" "$rootfs_dir/rootfs-$1.tar" \
    "agent-init-test:$1" >/dev/null
}

# Processes left in a cgroup after a crash, then the cgroups themselves.
remove_cgroups() {  # name
  local c
  for c in /sys/fs/cgroup/*/"$1"; do
    [ -d "$c" ] || continue
    find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
  done
  for c in /sys/fs/cgroup/*/"$1"; do
    [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}

docker_teardown() {
  load_env docker
  [ -n "${DOCKER_DIR:-}" ] || return 0
  # dockerd stops its containers, then its containerd.
  "$build/tests/daemon-ctl" stop "$DOCKER_DIR/dockerd.pid" 30
  pkill -KILL -f "containerd-shim-runc-v2 .*-address $DOCKER_DIR/" 2>/dev/null || true
  remove_cgroups "$DOCKER_CGROUP"
  rm -rf "$DOCKER_DIR" "$state_dir/docker.env"
}

# ---- containerd ----

ctr_() { ctr -a "$CONTAINERD_DIR/containerd.sock" -n "$CONTAINERD_NS" "$@"; }

containerd_setup() {
  CONTAINERD_DIR=$(mktemp -d /tmp/ai-e2e-ctrd.XXXXXX)
  CONTAINERD_NS=ai-e2e-${CONTAINERD_DIR##*.}  # its cgroups are /<namespace>/<id>
  mkdir -p "$CONTAINERD_DIR"/{root,state,opt,fifo}
  cat >"$CONTAINERD_DIR/config.toml" <<TOML
version = 2
root = "$CONTAINERD_DIR/root"
state = "$CONTAINERD_DIR/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$CONTAINERD_DIR/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$CONTAINERD_DIR/opt"
TOML
  "$build/tests/daemon-ctl" start "$CONTAINERD_DIR/containerd.pid" "$CONTAINERD_DIR/containerd.log" 60 -- \
    unshare --mount --propagation private -- /bin/sh -c \
    'mount -t tmpfs -o mode=0755 ai-e2e-run /run && exec "$@"' sh \
    containerd --config "$CONTAINERD_DIR/config.toml" || return 1
  printf 'CONTAINERD_DIR=%s\nCONTAINERD_NS=%s\nCONTAINERD_PID=%s\n' "$CONTAINERD_DIR" "$CONTAINERD_NS" \
    "$(cat "$CONTAINERD_DIR/containerd.pid")" >"$state_dir/containerd.env"
  each_image containerd_import
}

containerd_import() {  # hash
  "$root/tests/e2e/oci-archive" "$rootfs_dir/rootfs-$1.tar" "$CONTAINERD_DIR/image.tar" "localhost/agent-init-test:$1"
  ctr_ images import "$CONTAINERD_DIR/image.tar" >/dev/null
  rm -f "$CONTAINERD_DIR/image.tar"
}

containerd_teardown() {
  load_env containerd
  [ -n "${CONTAINERD_DIR:-}" ] || return 0
  "$build/tests/daemon-ctl" stop "$CONTAINERD_DIR/containerd.pid" 30
  pkill -KILL -f "containerd-shim-runc-v2 -namespace $CONTAINERD_NS " 2>/dev/null || true
  remove_cgroups "$CONTAINERD_NS"
  rm -rf "$CONTAINERD_DIR" "$state_dir/containerd.env"
}

# ---- the fixtures ----

engine_setup() {
  mkdir -p "$state_dir"
  engine_teardown  # what an interrupted run left
  case $ENGINE in
    podman | podman-crun) podman_images ;;
    podman-rootless) rootless_setup ;;
    docker) docker_setup ;;
    containerd) containerd_setup ;;
  esac
}

engine_teardown() {
  case $ENGINE in
    podman | podman-crun)
      podman rmi -f "$IMAGE_A" "$IMAGE_B" "$IMAGE_C" "$IMAGE_D" >/dev/null 2>&1 || true
      podman images -a -q --filter "label=$E2E_LABEL" 2>/dev/null | xargs -r podman rmi -f >/dev/null 2>&1 || true
      ;;
    podman-rootless) rootless_teardown ;;
    docker) docker_teardown ;;
    containerd) containerd_teardown ;;
  esac
}

# Rootful Podman builds the images from the Containerfile (the prebuilt
# stage), as a user of the test image would; both runtimes share them.
# Every image the build makes, its stages too, carries E2E_LABEL, by which
# the teardown removes them all (tagged or not).
podman_images() { each_image podman_build; }

podman_build() {  # hash
  podman build -q --label "$E2E_LABEL" -f "$root/docker/Containerfile" --build-arg FROM=prebuilt --build-arg HASH="$1" \
    -t "localhost/agent-init-test:$1" "$root" >/dev/null
}
