// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {AccessControlUpgradeable} from "@openzeppelin/contracts-upgradeable/access/AccessControlUpgradeable.sol";
import {ERC20Upgradeable} from "@openzeppelin/contracts-upgradeable/token/ERC20/ERC20Upgradeable.sol";
import {ERC20BurnableUpgradeable} from "@openzeppelin/contracts-upgradeable/token/ERC20/extensions/ERC20BurnableUpgradeable.sol";

/// @title Project token: one EIP-1167 clone per project, created by the factory.
/// @notice The factory holds the admin and minter roles; it mints the auction's supply, or lets an
///         uncapped auction mint while it runs.
contract ProjectToken is ERC20Upgradeable, ERC20BurnableUpgradeable, AccessControlUpgradeable {
    bytes32 public constant MINTER_ROLE = keccak256("MINTER_ROLE");

    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor() {
        // The implementation only serves clones; nobody may initialize it.
        _disableInitializers();
    }

    function initialize(
        string calldata name_,
        string calldata symbol_,
        address admin,
        address holder,
        uint256 initialSupply
    ) external initializer {
        __ERC20_init(name_, symbol_);
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        _grantRole(MINTER_ROLE, admin);
        if (initialSupply > 0) _mint(holder, initialSupply);
    }

    function mint(address to, uint256 amount) external onlyRole(MINTER_ROLE) {
        _mint(to, amount);
    }
}
