// Package stackstart grows a goroutine's stack in one step while it is
// shallow. A goroutine starts with 2 KiB and doubles its stack each time a
// call needs more: a copy that adjusts every frame on it with the
// runtime's tables. aipm's processes that live a few milliseconds (a hook:
// aipm-bench's P8a) meet those tables cold, and the main goroutine's four
// copies (package initialisation, then json's and toml's recursion) with
// the stdin reader's two cost some 0.3 ms. One copy of a stack of one or
// two frames costs a fraction of that.
//
// The package imports nothing, so that its initialisation, which grows the
// main goroutine's stack, comes before every other package's of a command
// that imports it: packages are initialised in the order of their import
// paths, each after its imports.
package stackstart

func init() { Grow() }

// Grow grows the calling goroutine's stack to 32 KiB, what a hook's main
// goroutine comes to need, unless it is larger already.
func Grow() { _ = grow(0) }

// frame is grow's frame: more than 16 KiB, so that the 2 KiB stack is
// doubled to 32 KiB at once.
const frame = 20 << 10

// grow needs a frame of the size of frame (an array it reads at an index
// the compiler cannot know): the call grows the stack before grow runs.
//
//go:noinline
func grow(i int) byte {
	var b [frame]byte
	b[i] = 1
	return b[(i+1)%frame]
}
