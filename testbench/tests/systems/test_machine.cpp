// The one netlist builder (platforms/machine.h): a module per node by the
// factory its kind is registered with, links bound with the far end's
// buffer as credits, one fabric per machine, faults on lossy links only.
#include <sys/resource.h>

#include <catch2/catch.hpp>

#include <string>
#include <systemc>

#include "core/config.h"
#include "core/error.h"
#include "ethernet/ethernet_switch.h"
#include "gpu/gpu.h"
#include "adapter/hca.h"
#include "netreduce/fpga_aggregator.h"
#include "nvswitch/nvswitch.h"
#include "platforms/gpu_fabric.h"
#include "platforms/infiniband_fabric.h"
#include "platforms/machine.h"
#include "platforms/netreduce_machines.h"
#include "platforms/packet_memory.h"
#include "platforms/platform.h"
#include "roce/roce_nic.h"

using namespace incsim;
using platforms::Machine;

namespace {
// Two GPUs on one switch of kind `switch_kind`.
topo::Topology pair_on_switch(const std::string& switch_kind, const std::string& gpu_kind = topo::kinds::kGpu) {
  topo::Topology t;
  t.name = "pair";
  const int sw = t.add_switch("sw", 2, switch_kind);
  const int a = t.add_endpoint("a", 1, gpu_kind), b = t.add_endpoint("b", 1, gpu_kind);
  t.connect({sw, 0}, {a, 0}, 25, 10);
  t.connect({sw, 1}, {b, 0}, 50, 10);
  t.finalize();
  return t;
}
}  // namespace

TEST_CASE("the builder makes a kind an sc_main registers with that kind's factory", "[machine]") {
  int made = 0;
  platforms::register_node_kind("probe_switch", platforms::GpuFabric::kName, topo::NodeKind::Switch,
                                [&made](const topo::Topology&, int node, platforms::Fabric& f, net::PacketPool& pool) {
                                  ++made;
                                  return dynamic_cast<platforms::GpuFabric&>(f).make_switch(node, pool);
                                });
  Config cfg;
  Machine m(pair_on_switch("probe_switch"), cfg, 1);
  CHECK(made == 1);
  CHECK(m.fabric_name() == "nvlink");
  // A kind of its own is a plain credit-based switch: no multicast or reduction tables.
  CHECK(m.blocks_of<credit_switch::CreditSwitch>().size() == 1);
  CHECK(m.blocks_of<nvswitch::NvSwitch>().empty());
  CHECK(m.blocks_of<gpu::Gpu>().size() == 2);
  CHECK(sc_core::sc_find_object("sw.port1") != nullptr);
  // Each link end takes its link's rate and its far end's buffer as credits.
  REQUIRE(m.link_ends().size() == 4);
  CHECK(m.link_ends()[2].from == "sw.1");
  CHECK(m.link_ends()[2].to == "b.0");
  CHECK(m.link_ends()[2].port->bw_GBps() == 50);
  CHECK(m.link_ends()[3].port->bw_GBps() == 50);
  // A GPU fabric's links are lossless.
  CHECK_THROWS_WITH(m.link_faults("a", "sw"), Catch::Contains("lossless"));
}

TEST_CASE("a graph of two fabrics is refused before the first module is built", "[machine]") {
  Config cfg;
  CHECK_THROWS_WITH(Machine(pair_on_switch(topo::kinds::kEthernetSwitch), cfg, 1),
                    Catch::Contains("node a is a gpu of the nvlink fabric, but sw is a ethernet_switch of the "
                                    "ethernet fabric"));
  CHECK(sc_core::sc_find_object("sw") == nullptr);
  CHECK(sc_core::sc_find_object("a") == nullptr);
}

TEST_CASE("two fabrics joined by a bridge: each link takes its fabric's packets, and a link across without one is refused",
          "[machine]") {
  // gpu a -- hca -- ib_switch -- hca -- gpu b: NVLink-side links and InfiniBand links.
  auto graph = [](bool bridged) {
    topo::Topology t;
    t.name = "two_fabrics";
    const int a = t.add_endpoint("a", 1), b = t.add_endpoint("b", 1);
    const int sw = t.add_switch("ib", 2, topo::kinds::kIbSwitch);
    if (bridged) {
      const int ha = t.add_switch("ha", 2, topo::kinds::kHca), hb = t.add_switch("hb", 2, topo::kinds::kHca);
      t.connect({a, 0}, {ha, 0}, 63, 100);
      t.connect({ha, 1}, {sw, 0}, 50, 10);
      t.connect({b, 0}, {hb, 0}, 63, 100);
      t.connect({hb, 1}, {sw, 1}, 50, 10);
    } else {
      t.connect({a, 0}, {sw, 0}, 50, 10);
      t.connect({b, 0}, {sw, 1}, 50, 10);
    }
    t.finalize();
    return t;
  };
  Config cfg;
  CHECK_THROWS_WITH(Machine(graph(false), cfg, 1),
                    Catch::Contains("node a is a gpu of the nvlink fabric, but ib is a ib_switch of the infiniband "
                                    "fabric; a link carries one fabric's packets, and only a bridge (such as hca) joins two"));
  Machine m(graph(true), cfg, 1);
  CHECK(m.fabric_names() == std::vector<std::string>{"nvlink", "infiniband"});
  CHECK(m.pool().format().max_payload_bytes == 128);  // the GPUs' fabric's
  CHECK(m.fabric_as<platforms::InfinibandFabric>().packet_format().max_payload_bytes == 4096);
  CHECK(m.blocks_of<adapter::Hca>().size() == 2);
  // Each adapter's ports take their own link's rate.
  CHECK(sc_core::sc_find_object("ha") != nullptr);
  CHECK(m.packets_in_use() == 0);
  CHECK(platforms::is_bridge_kind("hca"));
  CHECK(platforms::bridged_fabric("hca") == "infiniband");
}

TEST_CASE("a kind in the wrong place, or of an unknown fabric, is refused", "[machine]") {
  Config cfg;
  CHECK_THROWS_WITH(Machine(pair_on_switch(topo::kinds::kNvSwitch, topo::kinds::kNvSwitch), cfg, 1),
                    Catch::Contains("node a is a nvswitch, which is a switch, not an endpoint"));
  CHECK_THROWS_WITH(platforms::register_node_kind("x", "fibre_channel", topo::NodeKind::Switch, {}),
                    Catch::Contains("unknown fabric 'fibre_channel'"));
  CHECK_THROWS_WITH(platforms::fabric_of_kind("toaster"), Catch::Contains("unknown node kind 'toaster'"));
}

TEST_CASE("an Ethernet machine: a module per node, faults on every link end, named by port or node", "[machine]") {
  Config cfg;
  cfg.set("link.loss", "0.5", "test");
  using Layout = platforms::NetReduceShape::Layout;
  const auto shape = platforms::netreduce_shape(Layout::Rack, 1, 3, true, cfg);
  Machine m(platforms::netreduce_topology(shape), cfg, 1);
  CHECK(m.fabric_name() == "ethernet");
  CHECK(m.blocks_of<roce::RoceNic>().size() == 3);
  CHECK(m.blocks_of<eth::EthernetSwitch>().size() == 1);
  CHECK(m.blocks_of<netreduce::FpgaAggregator>().size() == 1);
  CHECK(m.link_faults("host1", "switch").loss() == 0.5);
  CHECK(&m.link_faults("switch.4", "fpga.1") == &m.link_faults("switch", "fpga.1"));
  CHECK_THROWS_WITH(m.link_faults("switch", "fpga"), Catch::Contains("several links run switch -> fpga"));
  CHECK_THROWS_WITH(m.link_faults("host0", "host1"), Catch::Contains("no link host0 -> host1"));
  CHECK(m.frames_lost() == 0);
}

TEST_CASE("an Ethernet graph the fabric cannot build is refused before the first module", "[machine]") {
  Config cfg;
  topo::Topology t;
  t.name = "wide_host";
  const int sw = t.add_switch("sw", 3, topo::kinds::kEthernetSwitch);
  const int a = t.add_endpoint("a", 1, topo::kinds::kRoceHost), b = t.add_endpoint("b", 2, topo::kinds::kRoceHost);
  t.connect({sw, 0}, {a, 0}, 12.5, 50);
  t.connect({sw, 1}, {b, 0}, 12.5, 50);
  t.connect({sw, 2}, {b, 1}, 12.5, 50);
  t.finalize();
  CHECK_THROWS_WITH(Machine(t, cfg, 1), Catch::Contains("node b is a roce_host, which has 1 port, not 2"));
  CHECK(sc_core::sc_find_object("sw") == nullptr);
}

namespace {
uint64_t peak_resident_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;
}

// The estimate of `platform`'s packet-level memory against what building it
// takes; returns the estimate.
platforms::PacketMemory estimate_then_build(const std::string& platform, const platforms::PlatformShape& shape) {
  Config cfg;
  const topo::Topology t = platforms::make_topology(platform, shape, cfg);
  const platforms::PlatformDefaults d = platforms::platform_defaults(t);
  const platforms::PacketMemory estimate = platforms::packet_memory(t, cfg, d);
  const uint64_t before = peak_resident_bytes();
  const platforms::GpuMachine m(t, cfg, 1, d);
  const double built = static_cast<double>(peak_resident_bytes() - before);
  INFO(platform << ": estimated " << estimate.total() << " B (blocks " << estimate.blocks << ", routes "
                << estimate.routes << ", tables " << estimate.tables << "), built " << built << " B");
  // The reduction tables' storage is made when an entry is first taken
  // (nvswitch::ReductionTable): the estimate counts them for the run that
  // uses them all, a machine built and not run holds none.
  const double structure = static_cast<double>(estimate.blocks + estimate.routes);
  CHECK(structure > 0.8 * built);
  CHECK(structure < 1.25 * built);
  return estimate;
}
}  // namespace

// Refusing a platform too large for packet level needs its memory before
// it is built (platforms/packet_memory.h).
TEST_CASE("a cluster's packet-level memory, SHARP's buffers most of it, is estimated within 25% before it is built",
          "[machine][memory]") {
  platforms::PlatformShape shape;
  shape.nodes = 16;
  const platforms::PacketMemory m = estimate_then_build("cluster", shape);
  CHECK(m.tables > m.blocks + m.routes);
}

TEST_CASE("a 32x32 torus's packet-level memory is estimated within 25% before it is built", "[machine][memory]") {
  platforms::PlatformShape shape;
  shape.dims = true;
  shape.dims_x = shape.dims_y = 32;
  const platforms::PacketMemory m = estimate_then_build("torus", shape);
  CHECK(m.tables == 0);
}

TEST_CASE("a cluster of 16,384 nodes is estimated at far more memory than packet level can have", "[machine][memory]") {
  Config cfg;
  platforms::PlatformShape shape;
  shape.nodes = 16384;
  const topo::Topology t = platforms::make_topology("cluster", shape, cfg);
  const platforms::PacketMemory m = platforms::packet_memory(t, cfg, platforms::platform_defaults(t));
  // 75,776 switches with a route toward each of 131,072 GPUs, and 655,360 ports of SHARP buffers.
  CHECK(m.routes > uint64_t{75776} * 131072 * 6);
  CHECK(m.tables > uint64_t{655360} * 262144);
}
