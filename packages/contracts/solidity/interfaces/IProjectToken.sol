// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20Metadata} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Metadata.sol";

/// @notice The project token as auctions and the factory use it.
interface IProjectToken is IERC20Metadata {
    function MINTER_ROLE() external view returns (bytes32);

    function initialize(
        string calldata name,
        string calldata symbol,
        address admin,
        address holder,
        uint256 initialSupply
    ) external;

    function mint(address to, uint256 amount) external;

    function burn(uint256 amount) external;

    function hasRole(bytes32 role, address account) external view returns (bool);

    function grantRole(bytes32 role, address account) external;

    function renounceRole(bytes32 role, address callerConfirmation) external;
}
