// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice What the factory needs from the project registry.
interface IProjectRegistry {
    enum UserStatus {
        Default,
        Whitelisted,
        Blacklisted,
        Viewer
    }

    function ADMIN_ROLE() external view returns (bytes32);

    function hasRole(bytes32 role, address account) external view returns (bool);

    /// @notice True when `proposer` registered `projectHash` and the vote approved it.
    function isApprovedProposer(address proposer, bytes32 projectHash) external view returns (bool);
}
