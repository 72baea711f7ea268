//go:build !linux

package boltstore

import (
	"errors"
	"os"
)

// mapValue is not available here: PutStream reads the body into memory.
func mapValue(*os.File, int64, int) (func([]byte) []byte, func(), error) {
	return nil, nil, errors.ErrUnsupported
}
