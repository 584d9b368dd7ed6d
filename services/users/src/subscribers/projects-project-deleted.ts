import type { EventHandler } from "@fundraise/bus";
import type { ProjectsEvents } from "@fundraise/protocol";
import type { UserService } from "../users/user.service.ts";

/** The project is gone: its owner no longer owns it. */
export const onProjectDeleted =
  (users: UserService): EventHandler<typeof ProjectsEvents.deleted> =>
  async ({ projectId }) =>
    users.recordProjectDeleted(projectId);
