// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Auction} from "./Auction.sol";

/// @title Uncapped auction: unlimited supply at a fixed price, minted to the buyer at bid time.
/// @notice Needs the token's minter role (granted by the factory) to start, and gives it up at the end.
contract UncappedAuction is Auction {
    /// @dev The first implementation's getter, multicalled by its web client (see `DEFAULT_ADMIN_ROLE`).
    bytes32 public constant MINTER_ROLE = keccak256("MINTER_ROLE");

    uint256 public rate;

    /// @notice Always 0: the supply is unlimited. Kept because the first implementation had this getter (never
    ///         set, so 0) and its web client reads it from every auction type.
    function numberOfTokensToBeDistributed() external pure returns (uint256) {
        return 0;
    }

    function getCurrentRate() public view override returns (uint256) {
        return rate;
    }

    function _initialize(AuctionParams calldata params) internal override {
        if (params.rate == 0) revert InvalidParams("rate");
        rate = params.rate;
    }

    function _beforeStart() internal view override {
        if (!projectToken.hasRole(projectToken.MINTER_ROLE(), address(this))) revert MissingMinterRole();
    }

    function _placeBid(address bidder, uint256 amount) internal override {
        uint256 price = rate;
        uint256 tokens = _tokensFor(amount, price);
        if (tokens == 0) revert BidTooSmall(amount);
        uint256 cost = _costOf(tokens, price);
        soldProjectTokens += tokens;
        _collect(bidder, cost, projectWallet, price);
        projectToken.mint(bidder, tokens);
        emit TokenBought(bidder, cost, tokens);
        emit VariableChange("soldProjectTokens", soldProjectTokens);
    }

    function _finalize() internal override returns (uint256 finalPrice) {
        bytes32 minter = projectToken.MINTER_ROLE();
        if (projectToken.hasRole(minter, address(this))) projectToken.renounceRole(minter, address(this));
        return rate;
    }
}
