package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the kernel's USER_HZ (100 on every Linux we run on).
const clockTicks = 100

// cpuTime is the user+system CPU the process pid used so far.
func cpuTime(pid int) time.Duration {
	t := procTimes(pid)
	return t.user + t.sys
}

// procCPU is the CPU time a process used so far, in user and system mode.
type procCPU struct{ user, sys time.Duration }

// procTimes reads process pid's CPU time (zero when it is gone).
func procTimes(pid int) procCPU {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procCPU{}
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return procCPU{}
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64) // utime is field 14 of stat
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return procCPU{user: time.Duration(ut) * time.Second / clockTicks, sys: time.Duration(st) * time.Second / clockTicks}
}

// scrape reads the named counters from the daemon's /metrics; a counter
// the daemon does not export is missing from the map.
func scrape(base string, names ...string) map[string]float64 {
	out := map[string]float64{}
	client := &http.Client{Timeout: 2 * time.Second}
	res, err := client.Get(base + "/metrics")
	if err != nil {
		return out
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, n := range names {
			if strings.HasPrefix(line, n+" ") {
				v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, n)), 64)
				if err == nil {
					out[n] = v
				}
			}
		}
	}
	return out
}

// perMessage formats after-before of counter name divided by n, or n/a.
func perMessage(before, after map[string]float64, name string, n int) string {
	a, ok1 := after[name]
	b, ok2 := before[name]
	if !ok1 || !ok2 || n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", (a-b)/float64(n))
}
