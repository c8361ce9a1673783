// The test-facing names of src/host/netlink/simulator.ts, which replay also runs.
export {
  createSimulatedNetlink as createFakeNetlink,
  type SimulatedLinkKind as FakeLinkKind,
  SimulatedNetlink as FakeNetlink,
  type SimulatedNetlinkOptions as FakeNetlinkOptions,
} from "../simulator.ts";
