// The MultiTree NIC (modules/nic) end to end: every schedule runs on it with
// real data and ends exact; the lockstep, message flow control and the
// schedules' link use show in the times and the bytes on the links.
#include <catch2/catch.hpp>

#include <numeric>
#include <sstream>

#include "collectives/baselines.h"
#include "gpu/gpu.h"
#include "nic/nic.h"
#include "nic/scheduled_collective.h"
#include "cli_run.h"
#include "experiment.h"
#include "run_checked.h"

using namespace incsim;

namespace {

struct Run {
  std::vector<tb::Row> rows;
  double endpoint_GBps = 0;
};

Run run(const std::string& platform, const std::string& dims, const std::string& algorithm, const std::string& sizes,
        std::vector<std::pair<std::string, std::string>> overrides = {}, const std::string& dtype = "float",
        const std::string& redop = "sum") {
  tb::Options o = tb::run_options(platform, "allreduce", algorithm, sizes, std::move(overrides), dtype, redop);
  if (platform == "fattree") o.nodes = std::stoi(dims);
  else o.dims = dims;
  tb::Experiment e(o);
  Run r;
  r.rows = tb::run_checked(e, platform + " " + dims + " " + algorithm);
  r.endpoint_GBps = tb::collective_of(e).endpoint_GBps();
  return r;
}

uint64_t link_bytes(const tb::Row& r) { return std::accumulate(r.link_bytes.begin(), r.link_bytes.end(), uint64_t{0}); }

// One element, sizes that cut unevenly, and a size with every chunk large.
const char* kSizes = "4,12292,96K,1M";

}  // namespace

// One SystemC elaboration per process: one run per test case.
TEST_CASE("ring is exact on the NICs of a 4x4 torus", "[nic][exact]") { run("torus", "4x4", "ring", kSizes); }
TEST_CASE("dbtree is exact on the NICs of a 4x4 torus", "[nic][exact]") { run("torus", "4x4", "dbtree", kSizes); }
TEST_CASE("hd is exact on the NICs of a 4x4 torus", "[nic][exact]") { run("torus", "4x4", "hd", kSizes); }
TEST_CASE("ring2d is exact on the NICs of a 4x4 torus", "[nic][exact]") { run("torus", "4x4", "ring2d", kSizes); }
TEST_CASE("multitree is exact on the NICs of a 4x4 torus", "[nic][exact]") { run("torus", "4x4", "multitree", kSizes); }
TEST_CASE("multitree-msg is exact on the NICs of a 4x4 torus", "[nic][exact]") {
  run("torus", "4x4", "multitree-msg", kSizes);
}
TEST_CASE("ring2d is exact on the NICs of a 3x5 torus", "[nic][exact]") { run("torus", "3x5", "ring2d", "12292,96K"); }
TEST_CASE("ring2d is exact on the NICs of an 8x8 torus", "[nic][exact]") { run("torus", "8x8", "ring2d", "4,49156,1M"); }
TEST_CASE("ring2d-hier is exact on the NICs of a 4x4 torus", "[nic][exact]") { run("torus", "4x4", "ring2d-hier", kSizes); }
TEST_CASE("hd is exact on the NICs of a 3x5 torus (15 nodes)", "[nic][exact]") { run("torus", "3x5", "hd", "12292,96K"); }
TEST_CASE("dbtree is exact on the NICs of a 3x5 torus (15 nodes)", "[nic][exact]") {
  run("torus", "3x5", "dbtree", "12292,96K");
}
TEST_CASE("multitree-msg is exact on the NICs of a 3x5 torus", "[nic][exact]") {
  run("torus", "3x5", "multitree-msg", "12292,96K");
}
TEST_CASE("multitree is exact on the NICs of a 4x4 mesh", "[nic][exact]") { run("mesh", "4x4", "multitree", kSizes); }
TEST_CASE("ring2d is exact on the NICs of a 4x4 mesh", "[nic][exact]") { run("mesh", "4x4", "ring2d", "12292,96K"); }
TEST_CASE("multitree is exact on the NICs of a 16-node fat tree", "[nic][exact]") {
  run("fattree", "16", "multitree", kSizes);
}
TEST_CASE("dbtree is exact on the NICs of a 16-node fat tree", "[nic][exact]") { run("fattree", "16", "dbtree", "96K"); }
TEST_CASE("multitree is exact on the NICs of a 4x8 BiGraph", "[nic][exact]") { run("bigraph", "4x8", "multitree", kSizes); }
TEST_CASE("hdrm is exact on the NICs of a 4x16 BiGraph", "[nic][exact]") { run("bigraph", "4x16", "hdrm", "12292,1M"); }
// switch.vc_alloc=packet (the MultiTree figures' setting): packets of one
// message take different VCs and overtake each other; the NICs count bytes,
// so the results stay exact. The torus keeps each packet within its
// dateline set, BiGraph within its switch-hop set; the fat tree has one set.
const std::vector<std::pair<std::string, std::string>> kVcPerPacket{{"switch.vc_alloc", "packet"}};
TEST_CASE("multitree is exact on a 4x4 torus with a VC per packet", "[nic][exact][vc]") {
  run("torus", "4x4", "multitree", kSizes, kVcPerPacket);
}
TEST_CASE("multitree-msg is exact on a 3x5 torus with a VC per packet", "[nic][exact][vc]") {
  run("torus", "3x5", "multitree-msg", "12292,96K,1M", kVcPerPacket);
}
TEST_CASE("multitree is exact on a 4x8 BiGraph with a VC per packet", "[nic][exact][vc]") {
  run("bigraph", "4x8", "multitree", kSizes, kVcPerPacket);
}
TEST_CASE("multitree-msg is exact on a 4x8 BiGraph with a VC per packet", "[nic][exact][vc]") {
  run("bigraph", "4x8", "multitree-msg", "12292,1M", kVcPerPacket);
}
TEST_CASE("multitree is exact on a 16-node fat tree with a VC per packet", "[nic][exact][vc]") {
  run("fattree", "16", "multitree", kSizes, kVcPerPacket);
}
TEST_CASE("multitree reduces int32 with min exactly", "[nic][exact]") {
  run("torus", "4x4", "multitree", "12292", {}, "int32", "min");
}
TEST_CASE("hd reduces int32 with max exactly", "[nic][exact]") { run("torus", "4x4", "hd", "12292", {}, "int32", "max"); }

TEST_CASE("schedules on DGX-2's switches split each message over the GPU's six links", "[nic][bandwidth]") {
  const Run r = run("dgx2", "", "hd", "4M");
  // Halving-doubling's 4 + 4 steps on a non-blocking switch fabric move the
  // bandwidth-optimal amount: all six links busy, so well above one link's
  // sixth of the bound.
  CHECK(r.rows[0]["bound_fraction"] > 0.6);
}

// MultiTree's 4x4 torus schedule takes 5 + 5 steps, each sending one chunk
// (M/16) per link: the time is 10 chunk serializations on a 16 GB/s link.
void at_step_bound(const std::string& algorithm, double wire_per_payload) {
  const uint64_t m = 16u << 20;
  const Run r = run("torus", "4x4", algorithm, "16M");
  const double step_us = m / 16.0 * wire_per_payload / 16e9 * 1e6;
  INFO(algorithm << ": " << r.rows[0]["time_us"] << " us against " << 10 * step_us << " us");
  CHECK(r.rows[0]["time_us"] >= 10 * step_us);
  CHECK(r.rows[0]["time_us"] <= 1.03 * 10 * step_us);
}
TEST_CASE("MultiTree on a 4x4 torus runs at its schedule's step bound", "[nic][bandwidth]") {
  at_step_bound("multitree", 272.0 / 256.0);
}
TEST_CASE("MultiTreeMsg on a 4x4 torus runs at its schedule's step bound", "[nic][bandwidth]") {
  at_step_bound("multitree-msg", 1.0);
}

TEST_CASE("the NIC ring on a torus uses one link each way: a quarter of the bound", "[nic][bandwidth]") {
  const Run r = run("torus", "4x4", "ring", "4M");
  CHECK(r.rows[0]["bound_fraction"] > 0.22);
  CHECK(r.rows[0]["bound_fraction"] < 0.25);
}

// MultiTree on the 4x4 torus: 16 flows, each 15 Reduce and 15 Gather messages
// of M/16 between neighbours, so 3 link traversals each (NIC, router-router,
// NIC): per packet a 16-byte head flit, or per message one.
void wire_bytes(const std::string& algorithm, bool message) {
  const uint64_t chunk = (4u << 20) / 16;
  const Run r = run("torus", "4x4", algorithm, "4M");
  const uint64_t traversals = 16 * 30 * 3;
  const uint64_t per_message = message ? chunk + 16 : chunk / 256 * 272;
  CHECK(link_bytes(r.rows[0]) == traversals * per_message);
}
TEST_CASE("packet flow control puts a head flit on every packet", "[nic][flowcontrol]") { wire_bytes("multitree", false); }
TEST_CASE("message flow control puts one head flit on each message", "[nic][flowcontrol]") {
  wire_bytes("multitree-msg", true);
}

TEST_CASE("HDRM's rank mapping makes halving-doubling contention-free on BiGraph", "[nic][bandwidth]") {
  CHECK(run("bigraph", "4x8", "hdrm", "4M").rows[0]["bound_fraction"] > 0.95);
}
TEST_CASE("halving-doubling without the rank mapping contends on BiGraph", "[nic][bandwidth]") {
  CHECK(run("bigraph", "4x8", "hd", "4M").rows[0]["bound_fraction"] < 0.5);
}

// A node's NIC reduces a flow's partial sum on its way to the root; the
// root's result is gathered to all 16 nodes of the 4x4 torus.
TEST_CASE("NIC schedules: a faulty ALU in one NIC shows as exactly that many wrong elements on every node",
          "[nic][wrong]") {
  tb::Options o = tb::run_options("torus", "allreduce", "multitree", "64K");
  o.dims = "4x4";
  CHECK(tb::wrong_with_alu_fault(o, "n5.nic", 7) == 7 * 16);
}

TEST_CASE("a NIC alone: two endpoints wired back to back run a two-rank ring table exactly at the link's rate",
          "[nic][block]") {
  // No switch and no platform: two endpoints, each with its NIC inside,
  // port 0 to port 0, programmed through the NICs' schedule tables.
  net::PacketPool pool(net::PacketFormat{});
  gpu::GpuConfig gc{};
  gc.clock_ghz = 1.0;
  gc.mem_latency_cycles = 100;  // 100 ns, no jitter: the time is exact
  gc.mem_jitter_cycles = 0;
  gc.rx_buffer_bytes = 4096;
  gc.max_responses = 64;
  std::vector<nic::Nic*> nics;
  std::vector<std::unique_ptr<gpu::Gpu>> gpus;
  for (int i = 0; i < 2; ++i)
    gpus.push_back(std::make_unique<gpu::Gpu>(("n" + std::to_string(i)).c_str(), i, 1, gc, pool, [&](gpu::Gpu& g) {
      auto n = std::make_unique<nic::Nic>("nic", g);
      nics.push_back(n.get());
      return n;
    }));
  const double bw = 25.0, lat_ns = 10.0;
  for (int i = 0; i < 2; ++i) {
    gpus[i]->configure_port(0, bw, sc_core::sc_time(lat_ns, sc_core::SC_NS), gc.rx_buffer_bytes);
    gpus[i]->out(0).socket.bind(gpus[1 - i]->in(0).socket);
  }
  // The program names the link (no topology routes it): port 0 to the peer.
  collectives::Program ring = collectives::nic_ring_program(2);
  ring.links = {{0, 1, collectives::kNone, {0}}, {1, 0, collectives::kNone, {0}}};
  CHECK(std::string(nics[1]->name()) == "n1.nic");
  collectives::StepEstimate est{bw, 318, 1.0};
  // A hint naming a port the endpoint lacks is refused before anything loads.
  collectives::Program wrong_port = ring;
  wrong_port.links[1].ports = {1};
  CHECK_THROWS_WITH(nic::ScheduledCollective(wrong_port, {nics[0], nics[1]}, topo::Topology{},
                                             elements::DType::Float32, elements::RedOp::Sum, 7,
                                             nic::FlowControl::Packet, est),
                    "rank 1's link hint to rank 0 names port 1 of n1, which does not lead there");
  nic::ScheduledCollective c(ring, {nics[0], nics[1]}, topo::Topology{}, elements::DType::Float32,
                             elements::RedOp::Sum, 7, nic::FlowControl::Packet, est);
  const uint64_t bytes = 64 * 1024;
  bool done = false;
  c.start(bytes, [&] { done = true; });
  sc_core::sc_start();
  REQUIRE(done);
  CHECK(c.wrong() == 0);
  // Each NIC sends half the buffer to reduce and half to gather: 64 KiB in
  // 128-byte packets, each with a 16-byte head flit.
  const uint64_t wire = bytes / 128 * 144;
  for (auto& g : gpus) CHECK(g->out(0).bytes_sent() == wire);
  // Two steps one after the other (the gather needs the reduction in), each
  // a memory read of its message, its serialization and the wire latency.
  const double ns = sc_core::sc_time_stamp().to_seconds() * 1e9;
  CHECK(ns == Approx(2 * (100 + wire / 2 / bw + lat_ns)).margin(0.01));
  CHECK(pool.in_use() == 0);
}

namespace {
// An algorithm's time on the 4x4 torus with the authors' node (1 ns links,
// no memory latency) and these interfaces, at packet level.
double authors_node(const std::string& algorithm, const std::string& size, const std::string& interfaces) {
  return cli::first_row("--platform torus --dims 4x4 --algorithm " + algorithm + " --sizes " + size +
                        " -c nic.link_latency_ns=1 -c gpu.mem_latency_cycles=0 -c gpu.mem_jitter_cycles=0 " +
                        interfaces)["time_us"].get<double>();
}
}  // namespace

TEST_CASE("first-free interfaces: a step's messages queue behind the last step's on the first free one",
          "[nic][interfaces]") {
  // The node's four interfaces each send one message after another at a
  // network link's rate, so a step's flow that finds interface 0 within its
  // buffer waits there behind the last step's; with 1-message buffers it
  // waits less. Shared, every message takes the node's link in turn.
  const auto multitree = [](const std::string& interfaces) { return authors_node("multitree", "128K", interfaces); };
  const double shared = multitree(""), first_free = multitree("-c nic.interface_choice=first-free");
  const double small = multitree("-c nic.interface_choice=first-free -c nic.interface_buffer_messages=1");
  INFO(shared << " us shared, " << first_free << " first-free, " << small << " with 1-message buffers");
  CHECK(first_free > 1.3 * shared);
  CHECK(small < first_free);
  CHECK(small >= shared);
}

TEST_CASE("first-free interfaces: the 2D ring's messages of a step go out on all four links", "[nic][interfaces]") {
  // The table takes a step's messages east, west, south, north in turn, so
  // the four interfaces take one of each. Four messages to the same
  // neighbour would share its link while three idled (2.98 times slower).
  // The next step's messages take the first interfaces free, whatever the
  // direction their last messages went, so steps that overlap mix
  // directions on an interface (1.24 times the shared link's time).
  const double shared = authors_node("ring2d", "1M", ""),
               first_free = authors_node("ring2d", "1M", "-c nic.interface_choice=first-free");
  INFO(shared << " us shared, " << first_free << " first-free");
  CHECK(first_free < 1.5 * shared);
}

TEST_CASE("first-free interfaces: the step moves on once its messages are whole in their interfaces' buffers",
          "[nic][interfaces]") {
  // MultiTree at 1 MiB: node 0 sends one 64 KiB message in its first step,
  // 256 packets of 256 B, each 17 flits of 16 B at 16 GB/s (17 ns). The
  // authors' NI is done with it, and the step moves on, once what is not
  // yet on the wire fits the buffer: after 256 - B packets.
  const auto second_step = [](uint32_t buffer) {
    cli::TempDir d;
    cli::first_row("--platform torus --dims 4x4 --algorithm multitree --sizes 1M -c nic.link_latency_ns=1 "
                   "-c gpu.mem_latency_cycles=0 -c gpu.mem_jitter_cycles=0 -c nic.interface_choice=first-free "
                   "-c nic.interface_buffer_messages=" + std::to_string(buffer) + " --timeline " + d.file("t.json"));
    const nlohmann::json timeline = nlohmann::json::parse(cli::slurp(d.file("t.json")));
    for (const auto& e : timeline["traceEvents"])
      if (e["ph"] == "X" && e["pid"] == 0 && e["name"] == "timestep 2") return e["ts"].get<double>() * 1e3;
    FAIL("node 0 has no second step in the timeline");
    return 0.0;
  };
  for (const uint32_t buffer : {1u, 53u, 200u}) {
    INFO(buffer << "-message buffers");
    CHECK(second_step(buffer) == Approx((256 - buffer) * 17.0).margin(17));
  }
}

TEST_CASE("first-free interfaces off a torus or mesh, as flows, or misspelt are one sentence", "[nic][bad-input]") {
  const auto refused = [](const std::string& args, const std::string& sentence) {
    const cli::Result r = cli::incsim(args + " --sizes 96K --quiet");
    CHECK(r.code == 2);
    CHECK(r.err == "incsim: error: " + sentence + "\n");
  };
  refused("--platform fattree --algorithm multitree -c nic.interface_choice=first-free",
          "nic.interface_choice=first-free shares a torus or mesh node's interfaces; fattree is not one");
  refused("--platform torus --algorithm multitree --fidelity flow -c nic.interface_choice=first-free",
          "--fidelity flow: nic.interface_choice=first-free queues each interface's messages one after another, "
          "which flows do not model; run it at packet level");
  refused("--platform torus --algorithm multitree -c nic.interface_choice=first",
          "nic.interface_choice must be shared or first-free, not 'first'");
}
