import { describe, expect, it } from "vitest";
import { USER_ROLES, type UserRole } from "./common.ts";
import { ProjectsRpc } from "./projects.ts";
import { isReviewer, RPC_ROLES, roleAdmits, rolesInWords } from "./roles.ts";
import { roleInSession, type SessionState } from "./sessions.ts";
import { UsersRpc } from "./users.ts";

describe("roles", () => {
  it("the reviewers are Admin and Viewer", () => {
    expect(USER_ROLES.filter(isReviewer)).toEqual(["Admin", "Viewer"]);
  });

  it("an RPC with a role list admits those roles only; one without admits every role", () => {
    expect(USER_ROLES.filter((role) => roleAdmits(UsersRpc.list, role))).toEqual(["Admin"]);
    expect(USER_ROLES.filter((role) => roleAdmits(ProjectsRpc.viewerQueue, role))).toEqual([
      "Admin",
      "Viewer",
    ]);
    expect(USER_ROLES.filter((role) => roleAdmits(UsersRpc.get, role))).toEqual([...USER_ROLES]);
    expect(Object.keys(RPC_ROLES).every((name) => name.includes("."))).toBe(true);
  });

  it("a refusal names the roles", () => {
    expect(rolesInWords(["Admin"])).toBe("an Admin");
    expect(rolesInWords(["Viewer", "Admin"])).toBe("a Viewer or an Admin");
  });
});

describe("sessions: the role a token's caller acts with", () => {
  const session = (role: string | null): SessionState => ({
    role: role as UserRole | null,
    version: 2,
    revokedBelow: 0,
    deleted: false,
  });

  it("is the session's role, which replaces the token's claim", () => {
    expect(roleInSession(session("Base"), "Viewer")).toBe("Base");
    expect(roleInSession(session("Admin"), "Base")).toBe("Admin");
  });

  it("is the token's claim while the session names no role the platform knows", () => {
    expect(roleInSession(session(null), "Viewer")).toBe("Viewer");
    expect(roleInSession(session("Auditor"), "Viewer")).toBe("Viewer");
  });
});
