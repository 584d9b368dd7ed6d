/** The database schema the auth service owns (its migrations build it); the outbox and processed_message tables live in it too. */
export const AUTH_SCHEMA = "auth";
