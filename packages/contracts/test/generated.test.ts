import { EventFragment, Interface, id } from "ethers";
import { describe, expect, it } from "vitest";
import { diffGenerated, generate } from "../scripts/generate.ts";
import { AUCTION_TYPES, auctionAbiByType, auctionStatusName } from "../src/auction-types.ts";
import {
  AUCTION_EVENTS,
  chainEvents,
  eventByTopic,
  eventNameByTopic,
  FACTORY_EVENTS,
  REGISTRY_EVENTS,
  topicsOf,
} from "../src/events.ts";
import { auctionAbi } from "../src/generated/auction.ts";
import { auctionFactoryAbi } from "../src/generated/auction-factory.ts";
import { projectRegistryAbi } from "../src/generated/project-registry.ts";
import { ADMIN_ROLE, roleOf, UserStatus } from "../src/roles.ts";

describe("generated ABIs", () => {
  it("match a fresh compilation of solidity/ (abi:check)", () => {
    // Uses the artifacts/ cache when the sources are unchanged; a cold cache runs solc once.
    const { files } = generate();
    expect(diffGenerated(files)).toEqual([]);
  });
});

describe("event specs", () => {
  const abis = { registry: projectRegistryAbi, factory: auctionFactoryAbi, auction: auctionAbi } as const;

  it("declare exactly what the contracts emit", () => {
    for (const spec of Object.values(chainEvents)) {
      // By signature: a bare name is ambiguous for the overloaded BidSubmission.
      const fragment = new Interface(abis[spec.source] as unknown as string[]).getEvent(spec.signature);
      expect(fragment?.format("full"), spec.name).toBe(EventFragment.from(spec.declaration).format("full"));
      expect(spec.topic).toBe(id(spec.signature));
      // Every auction type emits the shared events too.
      if (spec.source === "auction") {
        for (const type of AUCTION_TYPES) {
          expect(
            new Interface(auctionAbiByType[type] as unknown as string[]).getEvent(spec.signature)?.topicHash,
          ).toBe(spec.topic);
        }
      }
    }
    expect(chainEvents.Register.signature).toBe("Register(address,bytes32)");
    expect(chainEvents.CreateAuctionEvent.signature).toBe(
      "CreateAuctionEvent(address,address,string,bytes32)",
    );
    expect(chainEvents.UserStatusChanged.signature).toBe("UserStatusChanged(address,uint8,uint8)");
    expect(chainEvents.ClaimTokens.signature).toBe("ClaimTokens(uint256,uint256)");
  });

  it("tell the two BidSubmission forms apart by topic, not by name", () => {
    const { BidSubmission: plain, DutchBidSubmission: dutch } = chainEvents;
    expect([plain.name, dutch.name]).toEqual(["BidSubmission", "BidSubmission"]);
    expect(dutch.signature).toBe("BidSubmission(address,uint256,uint256)");
    expect(dutch.topic).not.toBe(plain.topic);
    expect(eventNameByTopic.get(dutch.topic)).toBe("DutchBidSubmission");
    expect(eventNameByTopic.get(plain.topic)).toBe("BidSubmission");
    expect(eventNameByTopic.size).toBe(Object.keys(chainEvents).length);
    expect(() => new Interface(auctionAbi as unknown as string[]).getEvent("BidSubmission")).toThrow(
      /ambiguous/,
    );
  });

  it("group the followed events by source", () => {
    expect([...REGISTRY_EVENTS, ...FACTORY_EVENTS, ...AUCTION_EVENTS].sort()).toEqual(
      Object.keys(chainEvents).sort(),
    );
    expect(topicsOf("factory")).toEqual([
      chainEvents.TokenCreation.topic,
      chainEvents.CreateAuctionEvent.topic,
    ]);
    expect(eventByTopic.get(chainEvents.AuctionPaused.topic)?.name).toBe("AuctionPaused");
  });
});

describe("roles and names", () => {
  it("maps chain status and admin flag to the platform role", () => {
    expect(ADMIN_ROLE).toBe(id("ADMIN_ROLE"));
    expect(roleOf(UserStatus.Default, false)).toBe("Base");
    expect(roleOf(1n, false)).toBe("Whitelist");
    expect(roleOf(UserStatus.Blacklisted, false)).toBe("Blacklist");
    expect(roleOf(UserStatus.Viewer, false)).toBe("Viewer");
    expect(roleOf(UserStatus.Blacklisted, true)).toBe("Admin");
    expect(roleOf(7, false)).toBe("Base");
  });

  it("names auction statuses", () => {
    expect([0, 1, 2, 3].map((s) => auctionStatusName(s))).toEqual(["Off", "Running", "Paused", "Ended"]);
    expect(() => auctionStatusName(4n)).toThrow(RangeError);
  });
});
