import { withMessage } from "@fundraise/bus";
import { AuthRpc } from "@fundraise/protocol";
import { Wallet } from "ethers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../test/harness.ts";

// A success reply's message reaches the HTTP envelope (rules.md §2.9: a register whose mail could not be
// sent says so). The auth service is played by the in-memory bus.
let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(() => h?.close());

const register = async () => {
  const wallet = Wallet.createRandom();
  return h.app.inject({
    method: "POST",
    url: "/Authentication/Register",
    payload: {
      Name: "Ada",
      Surname: "Lovelace",
      Username: "ada",
      MailAddress: "ada@example.org",
      SignedMessage: await wallet.signMessage("REGISTER"),
    },
  });
};

describe("the envelope's message on success", () => {
  it("carries the service's note with the data", async () => {
    await h.bus.serve(AuthRpc.register, async () => withMessage("17", "The mail could not be sent."));
    const res = await register();
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ data: "17", success: true, message: "The mail could not be sent." });
  });

  it("is null when the service gives none", async () => {
    await h.bus.serve(AuthRpc.register, async () => "18");
    const res = await register();
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ data: "18", success: true, message: null });
  });
});
