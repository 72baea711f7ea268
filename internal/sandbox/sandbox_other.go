//go:build !linux

package sandbox

import "errors"

// Self is the running binary; without Landlock nothing re-executes it.
const Self = ""

// ABI is 0: there is no Landlock outside Linux.
func ABI() int { return 0 }

// SetUndumpable does nothing outside Linux.
func SetUndumpable() error { return nil }

func enter(Spec) error { return errors.New("sandboxed upstreams need Linux (Landlock)") }
