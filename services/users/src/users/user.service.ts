import type { EntityManager } from "@mikro-orm/core";
import { User } from "./user.entity.ts";

export interface UserService {
  /** Users who finished sign-up (verified e-mail): the platform's public head count. */
  countVerified(): Promise<number>;
}

export function createUserService(deps: { em: () => EntityManager }): UserService {
  return {
    countVerified: () => deps.em().count(User, { isVerified: true }),
  };
}
