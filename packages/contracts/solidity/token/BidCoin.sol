// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ERC20Wrapper} from "@openzeppelin/contracts/token/ERC20/extensions/ERC20Wrapper.sol";

/// @title The platform's bid coin: an ERC20 wrapping a stablecoin 1:1.
/// @notice Auctions take bids only in this coin. `depositFor` wraps, `withdrawTo` unwraps, and `recover`
///         mints wrapper tokens for underlying sent to this contract by plain transfer.
contract BidCoin is ERC20Wrapper {
    event Mint(address buyer, uint256 amount);
    event Burn(address spender, uint256 amount);
    event Recover(address receiver, uint256 amount);

    constructor(
        IERC20 underlyingToken,
        string memory name_,
        string memory symbol_
    ) ERC20(name_, symbol_) ERC20Wrapper(underlyingToken) {}

    function depositFor(address account, uint256 value) public override returns (bool) {
        super.depositFor(account, value);
        emit Mint(account, value);
        return true;
    }

    function withdrawTo(address account, uint256 value) public override returns (bool) {
        super.withdrawTo(account, value);
        emit Burn(msg.sender, value);
        return true;
    }

    function recover(address account) external returns (uint256 amount) {
        amount = _recover(account);
        emit Recover(account, amount);
    }
}
