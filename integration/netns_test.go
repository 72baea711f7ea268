package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Test hosts in network namespaces: each netns is a host of its own,
// created by the test and removed by t.Cleanup; processes run in one with
// `ip netns exec`, and the test reaches them by dialing from inside it
// (a locked OS thread that joins the namespace for the socket call). No
// interface of the host's own namespace is touched: the veth pairs are
// made and addressed inside the test's namespaces only.

// netnsPrefix names every namespace these tests make: netnsPrefix, the
// test process's pid, "-" and a role. Leftovers of a dead pid (a killed
// test run) are removed when the next run starts.
const netnsPrefix = "rsdit-"

type netns struct {
	name   string
	client *http.Client // dials inside the namespace
}

// requireNetns skips unless the test can make network namespaces (root,
// iproute2's ip); RESOURCED_REQUIRE_NETNS=1 makes that a failure.
func requireNetns(t *testing.T) {
	t.Helper()
	msg := ""
	if os.Geteuid() != 0 {
		msg = "network-namespace partition tests need root (ip netns add)"
	} else if _, err := exec.LookPath("ip"); err != nil {
		msg = "network-namespace partition tests need iproute2's ip: apt-get install iproute2"
	}
	if msg == "" {
		removeStaleNetns(t)
		return
	}
	if os.Getenv("RESOURCED_REQUIRE_NETNS") == "1" {
		t.Fatal(msg + " (RESOURCED_REQUIRE_NETNS=1)")
	}
	t.Skip(msg)
}

// removeStaleNetns deletes namespaces of this prefix whose test process
// is gone.
func removeStaleNetns(t *testing.T) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, _, _ := strings.Cut(sc.Text(), " ")
		rest, ok := strings.CutPrefix(name, netnsPrefix)
		if !ok {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(pid); err == nil {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", n)); err == nil {
				continue // this run's, or another live run's
			}
		}
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Logf("removing the leftover namespace %s: %v: %s", name, err, out)
		} else {
			t.Logf("removed the leftover namespace %s", name)
		}
	}
}

// ipCmd runs ip with args and fails the test on an error.
func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// newNetns makes a namespace named for role with its loopback up, removed
// when the test ends.
func newNetns(t *testing.T, role string) *netns {
	t.Helper()
	n := &netns{name: fmt.Sprintf("%s%d-%s", netnsPrefix, os.Getpid(), role)}
	exec.Command("ip", "netns", "del", n.name).Run() // a leftover of this pid's earlier test
	ipCmd(t, "netns", "add", n.name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", n.name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", n.name, err, out)
		}
	})
	ipCmd(t, "-n", n.name, "link", "set", "lo", "up")
	n.client = &http.Client{Transport: &http.Transport{DialContext: n.dial, MaxIdleConnsPerHost: 64, DisableCompression: true}}
	t.Cleanup(n.client.CloseIdleConnections)
	return n
}

// command is name args run inside the namespace.
func (n *netns) command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.name, name}, args...)...)
}

// dial opens a connection from inside the namespace: a goroutine locked to
// its OS thread joins the namespace, makes the socket (which stays in the
// namespace whatever thread uses it later) and joins the original one
// again; a thread that cannot go back is left locked, so Go ends it.
func (n *netns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		c, err := n.dialLocked(ctx, network, addr)
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

func (n *netns) dialLocked(ctx context.Context, network, addr string) (net.Conn, error) {
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, err
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + n.name)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("joining %s: %w", n.name, err)
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
		runtime.UnlockOSThread()
	}
	return c, err
}

// link joins a and b by a veth pair, ifname in both, with aAddr and bAddr
// (CIDR) on a private /30.
func link(t *testing.T, a, b *netns, ifA, ifB, aAddr, bAddr string) {
	t.Helper()
	ipCmd(t, "-n", a.name, "link", "add", ifA, "type", "veth", "peer", "name", ifB, "netns", b.name)
	ipCmd(t, "-n", a.name, "addr", "add", aAddr, "dev", ifA)
	ipCmd(t, "-n", b.name, "addr", "add", bAddr, "dev", ifB)
	ipCmd(t, "-n", a.name, "link", "set", ifA, "up")
	ipCmd(t, "-n", b.name, "link", "set", ifB, "up")
}

// partitionNet is three hosts: s3 with a link to each of a and b. Cutting
// a's link at the S3 end makes a's packets to S3 vanish (a's side keeps
// its address and route but has no carrier), as a partition does; healing
// brings the link back.
type partitionNet struct {
	s3, a, b   *netns
	s3ForA     string // S3's address as a sees it
	s3ForB     string
	cutA, heal func()
	// objects is the directory on versitygw's disk that holds the
	// objects of partitionPair's prefix (versitygw's posix backend keeps
	// an object as a file named by its key).
	objects string
}

const s3Port = "7070"

func newPartitionNet(t *testing.T) *partitionNet {
	t.Helper()
	p := &partitionNet{s3: newNetns(t, "s3"), a: newNetns(t, "a"), b: newNetns(t, "b"),
		s3ForA: "10.77.0.1:" + s3Port, s3ForB: "10.77.0.5:" + s3Port}
	link(t, p.s3, p.a, "to-a", "to-s3", "10.77.0.1/30", "10.77.0.2/30")
	link(t, p.s3, p.b, "to-b", "to-s3", "10.77.0.5/30", "10.77.0.6/30")
	// Called from other goroutines: an error fails the test, not FailNow.
	setLink := func(state string) {
		if out, err := exec.Command("ip", "-n", p.s3.name, "link", "set", "to-a", state).CombinedOutput(); err != nil {
			t.Errorf("ip link set to-a %s: %v: %s", state, err, out)
		}
	}
	p.cutA = func() { setLink("down") }
	p.heal = func() { setLink("up") }
	return p
}

// startVersityIn starts versitygw (xattr mode) in ns on s3Port, skipping
// like startVersity.
func startVersityIn(t *testing.T, ns *netns) *versity {
	t.Helper()
	v := newVersity(t)
	if err := unix.Setxattr(v.root, "user.resourced-probe", []byte("1"), 0); err != nil {
		t.Skipf("the temporary directory takes no user extended attributes (%v): versitygw's xattr mode cannot run here", err)
	}
	v.addr, v.ns = "0.0.0.0:"+s3Port, ns
	v.start()
	return v
}

// startInNetns starts resourced in ns with key, the store at endpoint and
// env (the S3 credentials), serving on the namespace's loopback.
func startInNetns(t *testing.T, ns *netns, key []byte, store string, env []string) *instance {
	t.Helper()
	dir := t.TempDir()
	keyFile := dir + "/hmac.key"
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := dir + "/resourced.yaml"
	yaml := fmt.Sprintf("baseURL: %s\nauth:\n  hmacSecretFile: %s\n%s", testBaseURL, keyFile, store)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	in := &instance{t: t, dataDir: dir + "/data", config: cfg, extraEnv: env, ns: ns, Key: key}
	in.start()
	t.Cleanup(in.stop)
	in.Token = in.mint(tokenClaims("default", scopeRead+" "+scopeWrite))
	return in
}

// waitAnswers polls url through c until it answers HTTP, for up to 30 s.
func waitAnswers(t *testing.T, c *http.Client, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		resp, err := c.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within 30s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
