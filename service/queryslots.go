package service

import (
	"context"
	"sync"
)

// tenantSlots is a counting semaphore with a share per tenant: at most
// total slots are held at once, and at most perTenant of them by one
// tenant, so one tenant's costly calls leave the others a slot. A waiter
// wakes whenever a slot comes back and looks again.
type tenantSlots struct {
	mu        sync.Mutex
	free      int
	perTenant int
	held      map[string]int
	back      chan struct{} // closed, and replaced, when a slot comes back
}

func newTenantSlots(total, perTenant int) *tenantSlots {
	return &tenantSlots{free: total, perTenant: perTenant, held: map[string]int{}, back: make(chan struct{})}
}

// acquire takes a slot for tenant, waiting until one is free and the
// tenant holds less than its share, or until ctx ends (its error).
func (t *tenantSlots) acquire(ctx context.Context, tenant string) (release func(), err error) {
	for {
		t.mu.Lock()
		if t.free > 0 && t.held[tenant] < t.perTenant {
			t.free--
			t.held[tenant]++
			t.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { t.release(tenant) }) }, nil
		}
		back := t.back
		t.mu.Unlock()
		select {
		case <-back:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (t *tenantSlots) release(tenant string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.free++
	if t.held[tenant]--; t.held[tenant] <= 0 {
		delete(t.held, tenant)
	}
	close(t.back)
	t.back = make(chan struct{})
}
