import { loadEnv, ServiceEnv, serviceSections } from "@fundraise/service-kit";

export const UsersEnv = ServiceEnv;

export type UsersConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Record<string, string | undefined> = process.env) {
  return Object.freeze({
    ...serviceSections(loadEnv(UsersEnv, env)),
    // GET /user/get answers without invitations rather than wait longer for the projects service.
    projects: { invitationsTimeoutMs: 1500 },
  });
}
