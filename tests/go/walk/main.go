// A Go program for the supervisor's tests: the Go runtime makes its system calls itself,
// so the stage never sees them.
//
// Usage:
//
//	walk tree DIR       prints every entry under DIR, sorted, with its size and mode
//	walk stat FILE MS   stats FILE as fast as it is let for MS milliseconds, then prints
//	                    the number of calls made
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: walk tree DIR | walk stat FILE MS")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "tree":
		err := filepath.WalkDir(os.Args[2], func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			st, err := os.Lstat(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(os.Args[2], p)
			fmt.Printf("%s %d %s\n", rel, st.Size(), st.Mode())
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "stat":
		ms, err := strconv.Atoi(os.Args[3])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		deadline := time.Now().Add(time.Duration(ms) * time.Millisecond)
		n := 0
		for {
			if _, err := os.Stat(os.Args[2]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			n++
			if !time.Now().Before(deadline) {
				break
			}
		}
		fmt.Println(n)
	}
}
