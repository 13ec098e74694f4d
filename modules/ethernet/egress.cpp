#include "egress.h"

namespace incsim::eth {

void Egress::serve() {
  wake.fired();
  const sc_core::sc_time now = sim_now();
  out.absorb_credits(now);
  if (!out.link_free(now)) {
    wake.at(out.busy_until());
    return;
  }
  bool blocked = false;
  for (int q = 1; q >= 0; --q) {
    if (queue_[q].empty()) continue;
    net::Packet* p = queue_[q].front();
    const sc_core::sc_time eligible = p->t_head + delay_;
    if (eligible > now) {
      wake.at(eligible);
      continue;
    }
    if (!out.has_credit(p->vc, p->wire_bytes)) {
      blocked = true;
      continue;
    }
    queue_[q].pop();
    --depth_;
    if (ingress_) (*ingress_)[p->in_port]->release(p, sc_core::SC_ZERO_TIME);
    out.send(p, now, p->t_tail + delay_);
    wake.at(out.busy_until());
    return;
  }
  if (blocked) out.wait_for_credit(now);
}

}  // namespace incsim::eth
