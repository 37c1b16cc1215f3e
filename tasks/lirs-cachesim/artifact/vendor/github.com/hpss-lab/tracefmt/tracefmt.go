// Package tracefmt reads block I/O traces in the formats we use in the lab:
//
//   msr   the SNIA IOTTA MSR-Cambridge CSV format
//         Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
//   spc   the UMass/SPC-1 "ASU,LBA,Size,Opcode,Timestamp" format (LBA in
//         512-byte sectors)
//   keys  one decimal block number per line (our own synthetic traces)
//
// Every request is split into the fixed-size blocks it touches.
package tracefmt

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Options control how requests are turned into block references.
type Options struct {
	BlockSize int64 // bytes per block, default 4096
	ReadsOnly bool  // drop write requests
}

// Stats summarises what was read.
type Stats struct {
	Requests int
	Skipped  int // comment, blank or filtered lines
	Blocks   int
}

// Read parses r in the given format and calls emit for every block touched,
// in trace order.
func Read(r io.Reader, format string, o Options, emit func(block uint64)) (Stats, error) {
	if o.BlockSize <= 0 {
		o.BlockSize = 4096
	}
	var st Stats
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || t[0] == '#' {
			st.Skipped++
			continue
		}
		var off, size int64
		var write bool
		switch format {
		case "keys":
			k, err := strconv.ParseUint(t, 10, 64)
			if err != nil {
				return st, fmt.Errorf("line %d: %v", line, err)
			}
			st.Requests++
			st.Blocks++
			emit(k)
			continue
		case "msr":
			f := strings.Split(t, ",")
			if len(f) < 6 {
				return st, fmt.Errorf("line %d: want 7 fields, got %d", line, len(f))
			}
			var err error
			if off, err = strconv.ParseInt(f[4], 10, 64); err != nil {
				return st, fmt.Errorf("line %d: offset: %v", line, err)
			}
			if size, err = strconv.ParseInt(f[5], 10, 64); err != nil {
				return st, fmt.Errorf("line %d: size: %v", line, err)
			}
			write = strings.EqualFold(f[3], "Write")
		case "spc":
			f := strings.Split(t, ",")
			if len(f) < 4 {
				return st, fmt.Errorf("line %d: want 5 fields, got %d", line, len(f))
			}
			asu, err := strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64)
			if err != nil {
				return st, fmt.Errorf("line %d: asu: %v", line, err)
			}
			lba, err := strconv.ParseInt(strings.TrimSpace(f[1]), 10, 64)
			if err != nil {
				return st, fmt.Errorf("line %d: lba: %v", line, err)
			}
			if size, err = strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64); err != nil {
				return st, fmt.Errorf("line %d: size: %v", line, err)
			}
			// keep ASUs apart: 2^40 bytes each
			off = asu<<40 + lba*512
			write = strings.EqualFold(strings.TrimSpace(f[3]), "w")
		default:
			return st, fmt.Errorf("unknown trace format %q", format)
		}
		if write && o.ReadsOnly {
			st.Skipped++
			continue
		}
		if size <= 0 {
			size = 1
		}
		st.Requests++
		first := off / o.BlockSize
		last := (off + size - 1) / o.BlockSize
		for b := first; b <= last; b++ {
			st.Blocks++
			emit(uint64(b))
		}
	}
	return st, sc.Err()
}
