package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// RSS is the memory of the server process during the measured phase, read
// from /proc/PID/status (Linux).
type RSS struct {
	PID int `json:"pid"`
	// BaselineMiB is VmRSS just before the measured phase.
	BaselineMiB float64 `json:"baselineMiB"`
	// PeakMiB is the largest VmRSS sampled (every 5 ms) during the phase.
	PeakMiB float64 `json:"peakMiB"`
	// PeakAnonMiB and PeakFileMiB are the largest RssAnon (heap, stacks:
	// what the process allocated) and RssFile (mapped files: bbolt's mmap
	// of its database) sampled; VmRSS is about their sum.
	PeakAnonMiB float64 `json:"peakAnonMiB"`
	PeakFileMiB float64 `json:"peakFileMiB"`
	// HWMMiB is VmHWM at the end: the kernel's own peak, reset at the start
	// of the phase when /proc/PID/clear_refs allows it (HWMReset).
	HWMMiB   float64 `json:"hwmMiB"`
	HWMReset bool    `json:"hwmReset"`
	Samples  int     `json:"samples"`
}

// rssSampler samples a process's VmRSS until stopped.
type rssSampler struct {
	pid  int
	stop chan struct{}
	wg   sync.WaitGroup
	res  RSS
}

// startRSS resets the process's VmHWM if it may (writing 5 to clear_refs
// needs to own the process) and starts sampling.
func startRSS(pid int) (*rssSampler, error) {
	st, err := readStatus(pid)
	if err != nil {
		return nil, err
	}
	s := &rssSampler{pid: pid, stop: make(chan struct{})}
	s.res = RSS{PID: pid, BaselineMiB: st.rss}
	s.res.observe(st)
	s.res.HWMReset = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	s.wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			if st, err := readStatus(pid); err == nil {
				s.res.Samples++
				s.res.observe(st)
			}
		}
	})
	return s, nil
}

// Stop ends sampling and returns the result.
func (s *rssSampler) Stop() RSS {
	close(s.stop)
	s.wg.Wait()
	if st, err := readStatus(s.pid); err == nil {
		s.res.observe(st)
		s.res.HWMMiB = st.hwm
	}
	return s.res
}

func (r *RSS) observe(st status) {
	r.PeakMiB = max(r.PeakMiB, st.rss)
	r.PeakAnonMiB = max(r.PeakAnonMiB, st.anon)
	r.PeakFileMiB = max(r.PeakFileMiB, st.file)
}

// status is the memory of a process in MiB, from /proc/PID/status.
type status struct {
	rss, hwm, anon, file float64
}

// readStatus reads VmRSS, VmHWM, RssAnon and RssFile of pid.
func readStatus(pid int) (status, error) {
	var st status
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	fields := map[string]*float64{"VmRSS:": &st.rss, "VmHWM:": &st.hwm, "RssAnon:": &st.anon, "RssFile:": &st.file}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		dst, ok := fields[string(f[0])]
		if !ok {
			continue
		}
		kb, err := strconv.ParseFloat(string(f[1]), 64)
		if err != nil {
			return st, err
		}
		*dst = kb / 1024
		found++
	}
	if found < len(fields) {
		return st, fmt.Errorf("/proc/%d/status lacks VmRSS, VmHWM, RssAnon or RssFile", pid)
	}
	return st, nil
}
