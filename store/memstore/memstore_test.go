package memstore_test

import (
	"testing"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/store/memstore"
	"github.com/resourced/resourced/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Driver { return memstore.NewDriver() })
}
