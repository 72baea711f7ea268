package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// CPU accounting from /proc (Linux), to tell a slow server from a busy
// machine. Around every slice the tool reads the machine's busy time
// (/proc/stat), its own (/proc/self/stat) and, with -pid, the server's
// (/proc/PID/stat). Whatever else was busy is "others": other processes
// sharing the cores. Where /proc cannot be read the figures stay zero.

// clockTick is USER_HZ, the unit of /proc CPU times; 100 on every Linux
// platform Go supports.
const clockTick = 100

type cpuSnap struct {
	at                  time.Time
	machine, self, peer float64 // CPU seconds
	ok                  bool
}

func takeCPU(pid int) cpuSnap {
	s := cpuSnap{at: time.Now()}
	m, err := machineBusy()
	if err != nil {
		return s
	}
	self, err := procCPU("self")
	if err != nil {
		return s
	}
	s.machine, s.self, s.ok = m, self, true
	if pid > 0 {
		s.peer, _ = procCPU(strconv.Itoa(pid))
	}
	return s
}

// cpuUse is CPU seconds spent between two snapshots.
type cpuUse struct {
	wall, self, peer, others float64
}

func (a cpuSnap) until(b cpuSnap) cpuUse {
	if !a.ok || !b.ok {
		return cpuUse{}
	}
	u := cpuUse{wall: b.at.Sub(a.at).Seconds(), self: b.self - a.self, peer: b.peer - a.peer}
	u.others = max(0, (b.machine-a.machine)-u.self-u.peer)
	return u
}

func (u *cpuUse) add(v cpuUse) {
	u.wall += v.wall
	u.self += v.self
	u.peer += v.peer
	u.others += v.others
}

// Cores is average CPU use in cores over a target's measured slices.
type Cores struct {
	// Server is the server process (-pid), Client this tool (load
	// generator, and the ceiling handler in its slices), Others everything
	// else on the machine: noise.
	Server float64 `json:"server"`
	Client float64 `json:"client"`
	Others float64 `json:"others"`
}

func (u cpuUse) cores() *Cores {
	if u.wall <= 0 {
		return nil
	}
	return &Cores{Server: u.peer / u.wall, Client: u.self / u.wall, Others: u.others / u.wall}
}

// machineBusy returns the CPU seconds all cores have spent running
// processes (user, nice, system) or stolen by the hypervisor, since boot.
func machineBusy() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 8 || string(f[0]) != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy float64
	for i, v := range f[1:] {
		if i >= 8 { // guest times are already in user and nice
			break
		}
		n, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return 0, err
		}
		// user nice system idle iowait irq softirq steal: leave out idle
		// and iowait, and irq and softirq, which the kernel does not charge
		// to processes (the load's own loopback traffic is mostly softirq).
		if i < 3 || i == 7 {
			busy += n
		}
	}
	return busy / clockTick, nil
}

// procCPU returns the user+system CPU seconds of a process ("self" or a pid).
func procCPU(pid string) (float64, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may contain spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%s/stat: no command", pid)
	}
	f := bytes.Fields(b[i+1:])
	// After ")": state(0) ... utime(11) stime(12).
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%s/stat: too short", pid)
	}
	ut, err1 := strconv.ParseFloat(string(f[11]), 64)
	st, err2 := strconv.ParseFloat(string(f[12]), 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%s/stat: bad times", pid)
	}
	return (ut + st) / clockTick, nil
}
