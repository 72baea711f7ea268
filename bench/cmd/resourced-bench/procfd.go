package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// fdCount returns how many file descriptors process pid holds open
// (entries of /proc/PID/fd: sockets, spool files, the database).
func fdCount(pid int) (int, error) {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	return len(es), nil
}

// fdLimit returns the soft limit on open files of process pid, from
// /proc/PID/limits; -1 means unlimited.
func fdLimit(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, err
	}
	return parseFDLimit(b)
}

// parseFDLimit reads the soft "Max open files" limit out of the text of
// /proc/PID/limits:
//
//	Limit                     Soft Limit           Hard Limit           Units
//	Max open files            20000                20000                files
func parseFDLimit(b []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Max open files")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 1 {
			break
		}
		if f[0] == "unlimited" {
			return -1, nil
		}
		return strconv.Atoi(f[0])
	}
	return 0, errors.New("limits: no \"Max open files\" line")
}
